// #/runs/ID: one run. A finished run is loaded once; a run in progress follows its event stream
// (GET /v1/runs/ID/stream, Server-Sent Events) and falls back to polling when the stream is not
// available. Samples are kept by (rank, iteration) so that nothing is drawn twice. The telemetry
// under the busbw plot (switch queues; traffic generators and RDMA ports) is read with one request
// into one store for both panels: once when the run is finished, every POLL_MS while live.
import { canOperate, get, post, streamUrl, whoami } from '../api.js';
import { busbwPlot, alignSeries, rankPoints, xLink } from '../plot.js';
import { fmtHottestQueue, fmtP99Iteration, fmtPausedQueues, fmtSubnet } from '../step_cells.js';
import { finishedXEnd } from '../x_extent.js';
import { telemetryFeed } from '../telemetry_feed.js';
import { hostTelemetryPanel } from './run_host_telemetry.js';
import { telemetryPanel } from './run_telemetry.js';
import { el, errorBox, fmtMs, fmtNumber, fmtPercent, fmtTime, isFinal, stateBadge } from '../util.js';

const POLL_MS = 2000;
// A finished run's plot: per rank, the fastest and slowest iteration of each of 2 000 time
// buckets (GET /samples?max_points): every sample of a short run, and a long one's stalls.
export const PLOT_POINTS = 4000;
const DRAW_MS = 500;

// Fault windows from the stored result, or (while the run is live) paired fault_applied /
// fault_reverted events per step. Values in ms since the run origin; end null = still active.
export function faultWindows(run, events) {
  const result = run.result || {};
  if (Array.isArray(result.fault_windows) && result.fault_windows.length) {
    return result.fault_windows.map((w) => ({ step: w.step, start_ms: w.start_ms, end_ms: w.end_ms }));
  }
  const byStep = new Map();
  for (const e of events) {
    const step = e.detail && e.detail.step !== undefined ? e.detail.step : null;
    if (step === null) continue;
    if (e.kind === 'fault_applied') {
      const w = byStep.get(step) || { step, start_ms: e.t_ms, end_ms: null };
      w.start_ms = Math.min(w.start_ms, e.t_ms);
      byStep.set(step, w);
    } else if (e.kind === 'fault_reverted') {
      const w = byStep.get(step) || { step, start_ms: e.t_ms, end_ms: null };
      w.end_ms = Math.max(w.end_ms ?? e.t_ms, e.t_ms);
      byStep.set(step, w);
    }
  }
  return [...byStep.values()].sort((a, b) => a.step - b.step);
}

function stepKind(run, step) {
  const steps = run.scenario_document && run.scenario_document.steps;
  return steps && steps[step] ? steps[step].kind : 'fault';
}

export function overlaysFor(run, events, offsetMs = 0) {
  const windows = faultWindows(run, events).map((w) => ({
    start_s: (w.start_ms - offsetMs) / 1000,
    end_s: w.end_ms === null ? null : (w.end_ms - offsetMs) / 1000,
    label: `step ${w.step}: ${stepKind(run, w.step)}`,
    title: `step ${w.step} (${stepKind(run, w.step)}): ${fmtMs(w.start_ms)} – ${w.end_ms === null ? 'active' : fmtMs(w.end_ms)}`,
  }));
  const baseline = run.result && run.result.baseline;
  if (baseline && baseline.end_ms > baseline.start_ms) {
    windows.unshift({ start_s: (baseline.start_ms - offsetMs) / 1000, end_s: (baseline.end_ms - offsetMs) / 1000,
      label: 'baseline', cls: 'baseline', testid: 'baseline-window' });
  }
  const markers = events.map((e) => ({ t_s: (e.t_ms - offsetMs) / 1000, label: `${e.kind} ${JSON.stringify(e.detail || {})}`, cls: `ev-${e.kind}` }));
  return { windows, markers };
}

export async function runView(ctx, id) {
  const page = el('section', { class: 'run-page', testid: 'run-page' });
  ctx.root.append(page);
  const [run, who] = await Promise.all([get(`/v1/runs/${encodeURIComponent(id)}`), whoami()]);

  const samples = new Map();  // "rank:iteration" -> sample
  let events = [];
  let current = run;
  let plot = null;
  let dirty = true;
  let stream = null;
  let pollTimer = null;
  let lastSampleMs = -Infinity;
  let elapsedMs = null;  // the live run's clock (same origin as samples), null once finished
  let closed = false;
  let telemetryTimer = null;
  const link = xLink(`fc-run-${run.id}`);
  const feed = telemetryFeed(run.id);
  const telemetry = telemetryPanel({ store: feed.store, link,
    steps: () => (current.result && current.result.analysis && current.result.analysis.steps) || [] });
  const hostTelemetry = hostTelemetryPanel({ store: feed.store, link });

  const addSamples = (list) => {
    for (const s of list) {
      samples.set(`${s.rank}:${s.iteration}`, s);
      lastSampleMs = Math.max(lastSampleMs, s.start_ms);
    }
    if (list.length) dirty = true;
  };
  const addEvents = (list) => {
    const seen = new Set(events.map((e) => JSON.stringify(e)));
    for (const e of list) if (!seen.has(JSON.stringify(e))) events.push(e);
    events.sort((a, b) => a.t_ms - b.t_ms);
    if (list.length) dirty = true;
  };
  events = (run.timeline || []).slice();

  // --- layout ---
  const stateSlot = el('span');
  const scoreSlot = el('span', { class: 'score', testid: 'run-score' });
  const verdictSlot = el('span', { testid: 'run-verdict' });
  const liveSlot = el('div', { class: 'live', testid: 'run-live' });
  const stopSlot = el('div');
  const errorSlot = el('div');
  const actionSlot = el('div', { class: 'actions' });
  const plotBox = el('div', { class: 'plot', testid: 'busbw-plot' });
  const plotNote = el('p', { class: 'muted small' });
  const stepsSlot = el('div', { testid: 'steps' });
  const gatesSlot = el('div', { testid: 'gates' });
  const timelineSlot = el('div', { testid: 'timeline' });
  const metaSlot = el('dl', { class: 'meta' });

  page.append(
    el('div', { class: 'run-head' },
      el('h1', {}, `Run #${run.id} `, el('a', { href: `#/scenarios/${encodeURIComponent(run.scenario)}` }, run.scenario)),
      el('div', { class: 'headline' }, stateSlot, el('span', { class: 'score-label' }, 'score '), scoreSlot, verdictSlot),
      actionSlot),
    metaSlot, liveSlot, stopSlot, errorSlot,
    el('h2', {}, 'Bus bandwidth per iteration'), plotBox, plotNote,
    el('h2', {}, 'Switch telemetry'), telemetry.node,
    el('h2', {}, 'Traffic and RDMA counters'), hostTelemetry.node,
    el('h2', {}, 'Recovery per step'), stepsSlot,
    el('div', { class: 'columns' },
      el('div', {}, el('h2', {}, 'Gates'), gatesSlot),
      el('div', {}, el('h2', {}, 'Timeline'), timelineSlot)));

  let abortButton = null;
  if (canOperate(who)) {
    abortButton = el('button', { class: 'danger', testid: 'abort-button', onclick: async () => {
      if (!confirm(`Abort run #${run.id}? Every fault is reverted at once.`)) return;
      abortButton.disabled = true;
      try {
        await post(`/v1/runs/${run.id}/abort`);
      } catch (e) {
        errorSlot.replaceChildren(errorBox(e));
        abortButton.disabled = false;
      }
    } }, 'Abort run');
    actionSlot.append(abortButton);
  }
  actionSlot.append(el('a', { class: 'button-link', href: `#/compare?scenario=${encodeURIComponent(run.scenario)}&b=${run.id}` }, 'Compare…'));

  function renderHead(live) {
    // While no iteration completes (a link is down) the plot still has to move on with the run.
    const elapsed = live && !isFinal(current.state) && Number.isFinite(live.elapsed_ms) ? live.elapsed_ms : null;
    if (elapsed !== elapsedMs) { elapsedMs = elapsed; dirty = true; }
    stateSlot.replaceChildren(stateBadge(current.state, 'run-state'));
    scoreSlot.textContent = fmtNumber(current.score);
    verdictSlot.replaceChildren();
    if (current.passed === true) verdictSlot.append(el('span', { class: 'verdict pass' }, 'gates passed'));
    if (current.passed === false) verdictSlot.append(el('span', { class: 'verdict fail' }, 'gates failed'));
    if (abortButton) abortButton.hidden = isFinal(current.state);
    metaSlot.replaceChildren(
      el('dt', {}, 'fabric'), el('dd', {}, current.fabric),
      el('dt', {}, 'created'), el('dd', {}, fmtTime(current.created_ms)),
      el('dt', {}, 'started'), el('dd', {}, fmtTime(current.started_ms)),
      el('dt', {}, 'finished'), el('dd', {}, fmtTime(current.finished_ms)),
      el('dt', {}, 'duration'), el('dd', {}, fmtMs(current.duration_ms)),
      ...(current.suite_run_id ? [el('dt', {}, 'suite run'), el('dd', {}, `#${current.suite_run_id}`)] : []));
    liveSlot.replaceChildren();
    if (live && !isFinal(current.state)) {
      liveSlot.append(el('span', { class: 'pulse' }), ' live: ',
        `elapsed ${fmtMs(live.elapsed_ms)} · busbw ${fmtNumber(live.last_busbw_gbps, 3)} GB/s · ` +
        `ranks ready ${live.ready_ranks ?? '–'} · faults active ${live.active_faults ?? '–'} · samples ${live.samples ?? '–'}`);
    }
    const stop = current.result && current.result.stop;
    stopSlot.replaceChildren();
    if (stop) {
      stopSlot.append(el('div', { class: 'stop-box', testid: 'run-stop' },
        el('strong', {}, `Stopped: ${stop.reason}`), stop.detail ? ` — ${stop.detail}` : '',
        stop.time_to_revert_ms !== undefined && stop.time_to_revert_ms !== null
          ? ` (all faults reverted ${fmtMs(stop.time_to_revert_ms)} after the condition)` : ''));
    }
    errorSlot.replaceChildren(current.error ? errorBox(`Error: ${current.error}`, 'run-error') : '');
  }

  function renderResult() {
    const result = current.result || {};
    const analysis = result.analysis || {};
    const steps = analysis.steps || [];
    // An external workload without bytes is measured in steps/s (docs/scoring.md, rate_unit).
    const unit = analysis.rate_unit === 'steps_per_s' ? 'steps/s' : 'GB/s';
    stepsSlot.replaceChildren();
    if (steps.length) {
      // In a scroller of its own: fourteen columns can be wider than the page.
      stepsSlot.append(el('div', { class: 'table-scroll' }, el('table', { class: 'metrics', testid: 'steps-table' },
        el('thead', {}, el('tr', {}, ['step', 'fault', 'window', 'retained', 'worst busbw', 'detect', 'recover', 'longest stall',
          'p99 iteration (base → fault)', 'hottest queue', 'paused (PFC)', 'subnet (IB)', 'survived', 'score'].map((h) => el('th', {}, h)))),
        el('tbody', {}, steps.map((s) => el('tr', { testid: 'step-row' },
          el('td', {}, s.step), el('td', {}, stepKind(current, s.step)),
          el('td', {}, `${fmtMs(s.fault_start_ms)} – ${fmtMs(s.fault_end_ms)}`),
          el('td', { class: 'num' }, fmtPercent(s.retained)),
          el('td', { class: 'num' }, `${fmtNumber(s.worst_busbw_gbps, 3)} / ${fmtNumber(s.baseline_busbw_gbps, 3)} ${unit}`),
          el('td', { class: 'num' }, fmtMs(s.time_to_detect_ms)),
          el('td', { class: 'num' }, s.recovered === false ? 'not recovered' : fmtMs(s.time_to_recover_ms)),
          el('td', { class: 'num' }, fmtMs(s.longest_stall_ms)),
          el('td', { class: 'num', testid: 'step-p99' }, fmtP99Iteration(s)),
          el('td', { class: 'small', testid: 'step-hottest-queue' }, fmtHottestQueue(s.hottest_queue)),
          el('td', { class: 'small', testid: 'step-paused-queues' }, fmtPausedQueues(s)),
          el('td', { class: 'small', testid: 'step-subnet' }, fmtSubnet(s)),
          el('td', {}, s.survived ? 'yes' : 'no'),
          el('td', { class: 'num' }, fmtNumber(s.score))))))));
    } else {
      stepsSlot.append(el('p', { class: 'muted' }, isFinal(current.state) ? 'No per-step metrics.' : 'Computed when the run ends.'));
    }
    if (analysis.note) stepsSlot.append(el('p', { class: 'muted small' }, analysis.note));
    if (analysis.baseline_busbw_gbps !== undefined) {
      stepsSlot.append(el('p', { class: 'small' }, `Baseline ${fmtNumber(analysis.baseline_busbw_gbps, 3)} ${unit} over ${analysis.baseline_iterations ?? '–'} iterations.`));
    }
    const gates = result.gates || [];
    gatesSlot.replaceChildren(gates.length
      ? el('ul', { class: 'gates' }, gates.map((g) => el('li', { class: g.passed ? 'pass' : 'fail', testid: 'gate' },
        el('strong', {}, g.passed ? '✔ ' : '✘ '), `${g.gate}: ${g.detail}`)))
      : el('p', { class: 'muted' }, isFinal(current.state) ? 'No gates.' : 'Checked when the run ends.'));
  }

  function renderTimeline() {
    timelineSlot.replaceChildren(events.length
      ? el('table', { class: 'timeline', testid: 'timeline-table' },
        el('thead', {}, el('tr', {}, el('th', {}, 't'), el('th', {}, 'event'), el('th', {}, 'detail'))),
        el('tbody', {}, events.map((e) => el('tr', { class: `ev-${e.kind}`, testid: 'timeline-event' },
          el('td', { class: 'num' }, `${(e.t_ms / 1000).toFixed(3)} s`), el('td', {}, e.kind),
          el('td', { class: 'small mono' }, compactDetail(e.detail))))))
      : el('p', { class: 'muted' }, 'No events yet.'));
  }

  const finishedXMaxS = () => finishedXEnd(overlaysFor(current, events));

  function draw() {
    if (!dirty || closed) return;
    dirty = false;
    const list = [...samples.values()];
    const { ranks, points } = rankPoints(list);
    const overlays = overlaysFor(current, events);
    telemetry.setOverlays(telemetryOverlays(overlays, 'telemetry'));
    hostTelemetry.setOverlays(telemetryOverlays(overlays, 'host-telemetry'));
    plotNote.textContent = list.length
      ? `${list.length} samples from ${ranks.length} rank(s); shaded: fault windows${current.result && current.result.baseline ? ' and the baseline' : ''}; ticks: timeline events. Drag to zoom, double-click to reset.`
      : 'No samples yet.';
    if (!list.length) return;
    const data = alignSeries(points);
    if (plot && plot.ranks.join() === ranks.join()) {
      plot.handle.update(data, overlays);
    } else {
      if (plot) plot.handle.destroy();
      plotBox.replaceChildren();
      plot = { ranks, handle: busbwPlot(plotBox, ranks.map((r) => ({ label: `rank ${r}` })), data, overlays,
        { xMax: () => (elapsedMs === null ? finishedXMaxS() : elapsedMs / 1000), link }) };
    }
    renderTimeline();
  }

  // One read of the feed, shown by both panels.
  async function loadTelemetry(incremental, live) {
    const outcome = await feed.load(incremental, live);
    if (closed) return;
    telemetry.show(outcome);
    hostTelemetry.show(outcome);
  }

  function followTelemetry() {
    if (telemetryTimer || closed) return;
    const tick = () => loadTelemetry(true, true);
    telemetryTimer = setInterval(tick, POLL_MS);
    tick();
  }

  async function finalTelemetry() {
    if (telemetryTimer) { clearInterval(telemetryTimer); telemetryTimer = null; }
    await loadTelemetry(false, false);
  }

  async function reloadFinal() {
    const [full, s] = await Promise.all([get(`/v1/runs/${run.id}`), get(`/v1/runs/${run.id}/samples?max_points=${PLOT_POINTS}`)]);
    current = full;
    addSamples(s.samples || []);
    addEvents(full.timeline || []);
    dirty = true;
    renderHead(null);
    renderResult();
    renderTimeline();
    draw();
    await finalTelemetry();
  }

  function startPolling() {
    if (pollTimer || closed) return;
    const tick = async () => {
      try {
        const after = Number.isFinite(lastSampleMs) ? `?after_ms=${lastSampleMs - 1}` : '';
        const [full, s] = await Promise.all([get(`/v1/runs/${run.id}`), get(`/v1/runs/${run.id}/samples${after}`)]);
        current = full;
        addSamples(s.samples || []);
        addEvents(full.timeline || []);
        renderHead(full.live);
        if (isFinal(full.state)) { clearInterval(pollTimer); pollTimer = null; await reloadFinal(); }
      } catch (e) {
        if (e.status !== 401) errorSlot.replaceChildren(errorBox(e));
      }
    };
    pollTimer = setInterval(tick, POLL_MS);
    tick();
  }

  function startStream() {
    stream = new EventSource(streamUrl(run.id));
    stream.addEventListener('status', (m) => {
      const status = JSON.parse(m.data);
      current = { ...current, state: status.state };
      renderHead(status.live);
    });
    stream.addEventListener('samples', (m) => addSamples(JSON.parse(m.data).samples || []));
    stream.addEventListener('timeline', (m) => { addEvents(JSON.parse(m.data).events || []); renderTimeline(); });
    stream.addEventListener('end', () => {
      stream.close();
      stream = null;
      reloadFinal().catch((e) => errorSlot.replaceChildren(errorBox(e)));
    });
    // A refused stream (older server, 401/404) or a dropped connection: poll instead of letting
    // EventSource retry forever.
    stream.addEventListener('error', () => {
      if (!stream) return;
      stream.close();
      stream = null;
      startPolling();
    });
  }

  renderHead(run.live);
  renderResult();
  renderTimeline();
  if (isFinal(run.state)) {
    const s = await get(`/v1/runs/${run.id}/samples?max_points=${PLOT_POINTS}`);
    addSamples(s.samples || []);
    draw();
    await finalTelemetry();
  } else {
    startStream();
    followTelemetry();
  }
  const drawTimer = setInterval(() => { draw(); telemetry.draw(); hostTelemetry.draw(); }, DRAW_MS);
  return () => {
    closed = true;
    clearInterval(drawTimer);
    if (pollTimer) clearInterval(pollTimer);
    if (telemetryTimer) clearInterval(telemetryTimer);
    if (stream) stream.close();
    if (plot) plot.handle.destroy();
    telemetry.destroy();
    hostTelemetry.destroy();
  };
}

// The busbw plot's overlays with testids of a panel's own (prefix-fault-window, ...), so that each
// plot's stay countable.
function telemetryOverlays({ windows, markers }, prefix) {
  return {
    windows: windows.map((w) => ({ ...w, testid: `${prefix}-${w.testid || 'fault-window'}` })),
    markers: markers.map((m) => ({ ...m, testid: `${prefix}-event-marker` })),
  };
}

function compactDetail(detail) {
  if (!detail || typeof detail !== 'object') return String(detail ?? '');
  return Object.entries(detail).map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : v}`).join(' ');
}
