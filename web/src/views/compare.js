// #/compare?a=ID&b=ID[&scenario=NAME]: two runs overlaid on one time axis (0 = end of each run's
// baseline, so that the faults line up), a table of metric deltas, and the score history of the
// scenario.
import { get } from '../api.js';
import { alignSeries, busbwPlot, collectivePoints, scorePlot } from '../plot.js';
import { el, errorBox, fmtMs, fmtNumber, fmtPercent, fmtTime, isFinal } from '../util.js';
import { faultWindows, PLOT_POINTS } from './run.js';

const COLOR_A = '#1f77b4';
const COLOR_B = '#d62728';

// Where each run's time axis starts: the end of its baseline, else its first fault.
export function alignmentOffset(run) {
  const result = run.result || {};
  if (result.baseline && Number.isFinite(result.baseline.end_ms)) return result.baseline.end_ms;
  const windows = faultWindows(run, run.timeline || []);
  return windows.length ? windows[0].start_ms : 0;
}

function metricRows(a, b) {
  const rows = [];
  const push = (label, va, vb, fmt, higherIsBetter) => {
    const delta = Number.isFinite(va) && Number.isFinite(vb) ? vb - va : null;
    let cls = '';
    if (delta !== null && delta !== 0 && higherIsBetter !== null) cls = (delta > 0) === higherIsBetter ? 'better' : 'worse';
    rows.push(el('tr', { testid: 'delta-row' }, el('td', {}, label), el('td', { class: 'num' }, fmt(va)),
      el('td', { class: 'num' }, fmt(vb)),
      el('td', { class: `num ${cls}` }, delta === null ? '–' : `${delta > 0 ? '+' : ''}${fmt(delta)}`)));
  };
  const ra = a.result || {};
  const rb = b.result || {};
  push('score', a.score, b.score, (v) => fmtNumber(v), true);
  push('baseline busbw (GB/s)', ra.analysis?.baseline_busbw_gbps, rb.analysis?.baseline_busbw_gbps, (v) => fmtNumber(v, 3), true);
  push('duration', a.duration_ms, b.duration_ms, fmtMs, null);
  const steps = Math.max(ra.analysis?.steps?.length || 0, rb.analysis?.steps?.length || 0);
  for (let i = 0; i < steps; ++i) {
    const sa = ra.analysis?.steps?.[i] || {};
    const sb = rb.analysis?.steps?.[i] || {};
    push(`step ${i} retained`, sa.retained, sb.retained, fmtPercent, true);
    push(`step ${i} worst busbw (GB/s)`, sa.worst_busbw_gbps, sb.worst_busbw_gbps, (v) => fmtNumber(v, 3), true);
    push(`step ${i} time to detect`, sa.time_to_detect_ms, sb.time_to_detect_ms, fmtMs, false);
    push(`step ${i} time to recover`, sa.time_to_recover_ms, sb.time_to_recover_ms, fmtMs, false);
    push(`step ${i} longest stall`, sa.longest_stall_ms, sb.longest_stall_ms, fmtMs, false);
    push(`step ${i} first progress`, sa.time_to_first_progress_ms, sb.time_to_first_progress_ms, fmtMs, false);
    push(`step ${i} score`, sa.score, sb.score, (v) => fmtNumber(v), true);
  }
  return rows;
}

export async function compareView(ctx) {
  const { query } = ctx;
  const page = el('section', { class: 'compare-page', testid: 'compare-view' });
  ctx.root.append(page);
  page.append(el('h1', {}, 'Compare runs'));
  const handles = [];

  let scenario = query.get('scenario') || '';
  const aId = query.get('a');
  const bId = query.get('b');
  const [runA, runB] = await Promise.all([aId ? get(`/v1/runs/${encodeURIComponent(aId)}`) : null,
    bId ? get(`/v1/runs/${encodeURIComponent(bId)}`) : null]);
  if (!scenario) scenario = (runA || runB || {}).scenario || '';

  // Pickers: the scenario, then two of its finished runs.
  const scenarios = await get('/v1/scenarios').catch(() => ({ scenarios: [] }));
  const scenarioPick = el('select', { testid: 'compare-scenario' }, el('option', { value: '' }, 'choose a scenario'),
    (scenarios.scenarios || []).map((s) => el('option', { value: s.name }, s.name)));
  scenarioPick.value = scenario;
  const history = scenario
    ? (await get(`/v1/runs?scenario=${encodeURIComponent(scenario)}&limit=500`)).runs || []
    : [];
  const finished = history.filter((r) => isFinal(r.state));
  const runOption = (r) => el('option', { value: r.id }, `#${r.id} · ${r.fabric} · ${r.state} · score ${fmtNumber(r.score)} · ${fmtTime(r.started_ms)}`);
  const pickA = el('select', { testid: 'compare-a' }, el('option', { value: '' }, 'run A'), finished.map(runOption));
  const pickB = el('select', { testid: 'compare-b' }, el('option', { value: '' }, 'run B'), finished.map(runOption));
  pickA.value = aId || (finished[1] ? String(finished[1].id) : '');
  pickB.value = bId || (finished[0] ? String(finished[0].id) : '');
  const go = () => {
    const params = new URLSearchParams();
    if (scenarioPick.value) params.set('scenario', scenarioPick.value);
    if (scenarioPick.value === scenario) {
      if (pickA.value) params.set('a', pickA.value);
      if (pickB.value) params.set('b', pickB.value);
    }
    location.hash = `#/compare?${params}`;
  };
  scenarioPick.addEventListener('change', go);
  pickA.addEventListener('change', go);
  pickB.addEventListener('change', go);
  page.append(el('div', { class: 'toolbar' }, 'Scenario ', scenarioPick, ' A ', pickA, ' B ', pickB));

  if (runA && runB) {
    if (runA.scenario !== runB.scenario) {
      page.append(errorBox(`Run #${runA.id} is of ${runA.scenario} and run #${runB.id} of ${runB.scenario}: the comparison is across scenarios.`, 'compare-warning'));
    }
    const [samplesA, samplesB] = await Promise.all([get(`/v1/runs/${runA.id}/samples?max_points=${PLOT_POINTS}`), get(`/v1/runs/${runB.id}/samples?max_points=${PLOT_POINTS}`)]);
    const offA = alignmentOffset(runA);
    const offB = alignmentOffset(runB);
    const data = alignSeries([collectivePoints(samplesA.samples || [], offA), collectivePoints(samplesB.samples || [], offB)]);
    const windows = [
      ...faultWindows(runA, runA.timeline || []).map((w) => ({ start_s: (w.start_ms - offA) / 1000, end_s: (w.end_ms - offA) / 1000, label: `A step ${w.step}`, cls: 'fault-a' })),
      ...faultWindows(runB, runB.timeline || []).map((w) => ({ start_s: (w.start_ms - offB) / 1000, end_s: (w.end_ms - offB) / 1000, label: `B step ${w.step}`, cls: 'fault-b' })),
    ];
    const plotBox = el('div', { class: 'plot', testid: 'compare-plot' });
    page.append(el('h2', {}, 'Bus bandwidth per collective, aligned on the end of the baseline'),
      el('p', { class: 'muted small' }, 'Each point is one allreduce at the speed of its slowest rank. Shaded: fault windows of A (blue) and B (red).'),
      plotBox);
    if (data[0].length) {
      handles.push(busbwPlot(plotBox, [{ label: `A #${runA.id}`, color: COLOR_A }, { label: `B #${runB.id}`, color: COLOR_B }],
        data, { windows, markers: [] }, { xLabel: 'time since the end of the baseline (s)' }));
    } else {
      plotBox.append(el('p', { class: 'muted' }, 'Neither run has samples.'));
    }
    page.append(el('h2', {}, 'Metrics'), el('table', { class: 'metrics delta', testid: 'delta-table' },
      el('thead', {}, el('tr', {}, el('th', {}, 'metric'),
        el('th', {}, el('a', { href: `#/runs/${runA.id}` }, `A #${runA.id}`)),
        el('th', {}, el('a', { href: `#/runs/${runB.id}` }, `B #${runB.id}`)), el('th', {}, 'B − A'))),
      el('tbody', {}, metricRows(runA, runB))));
  } else if (scenario) {
    page.append(el('p', { class: 'muted' }, finished.length >= 2 ? 'Choose runs A and B.' : 'This scenario needs at least two finished runs to compare.'));
  }

  if (scenario) {
    const points = history.filter((r) => r.score !== null && r.score !== undefined && r.started_ms)
      .map((r) => [r.started_ms, r.score]).sort((x, y) => x[0] - y[0]);
    const box = el('div', { class: 'plot', testid: 'score-history' });
    page.append(el('h2', {}, `Score history of ${scenario}`), box);
    if (points.length) handles.push(scorePlot(box, points));
    else box.append(el('p', { class: 'muted' }, 'No scored runs yet.'));
  }
  return () => handles.forEach((h) => h.destroy());
}
