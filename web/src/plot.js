// busbw plots on uPlot, with fault windows and run events drawn as DOM overlays on the plot area
// (so that they stay inspectable and testable, and follow zoom and resize).
import uPlot from './vendor/uPlot.esm.js';
import { el } from './util.js';

const RANK_COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f'];

// Samples of several series on one x axis: xs is the sorted union, each series has null where it
// has no point (uPlot needs one shared x array; spanGaps draws through the nulls).
export function alignSeries(seriesPoints) {
  const xs = [...new Set(seriesPoints.flatMap((points) => points.map((p) => p[0])))].sort((a, b) => a - b);
  const index = new Map(xs.map((x, i) => [x, i]));
  const ys = seriesPoints.map((points) => {
    const y = new Array(xs.length).fill(null);
    for (const [x, v] of points) y[index.get(x)] = v;
    return y;
  });
  return [xs, ...ys];
}

// An iteration drawn as a level segment from its start to its end: a stall then shows as a long
// stretch at low busbw instead of a slope interpolated between two distant samples.
function stepPoints(startMs, durationMs, busbw, offsetMs) {
  const start = (startMs - offsetMs) / 1000;
  const end = (startMs + Math.max(durationMs, 0) - offsetMs) / 1000;
  return end > start ? [[start, busbw], [end, busbw]] : [[start, busbw]];
}

// Per-rank series: [[t_s, busbw], ...] for each rank (two points per iteration), x in seconds
// since the run's origin.
export function rankPoints(samples, offsetMs = 0) {
  const byRank = new Map();
  for (const s of samples) {
    if (!byRank.has(s.rank)) byRank.set(s.rank, []);
    byRank.get(s.rank).push(...stepPoints(s.start_ms, s.duration_ms, s.busbw_gbps, offsetMs));
  }
  const ranks = [...byRank.keys()].sort((a, b) => a - b);
  return { ranks, points: ranks.map((r) => byRank.get(r).sort((a, b) => a[0] - b[0])) };
}

// One point per collective: it completes when its slowest rank does, so the iteration's busbw is
// the lowest of its ranks' and it starts at the earliest rank's start.
export function collectivePoints(samples, offsetMs = 0) {
  const byIteration = new Map();
  for (const s of samples) {
    const cur = byIteration.get(s.iteration);
    const end = s.start_ms + s.duration_ms;
    if (!cur) byIteration.set(s.iteration, { start: s.start_ms, end, busbw: s.busbw_gbps });
    else {
      cur.start = Math.min(cur.start, s.start_ms);
      cur.end = Math.max(cur.end, end);
      cur.busbw = Math.min(cur.busbw, s.busbw_gbps);
    }
  }
  return [...byIteration.values()].sort((a, b) => a.start - b.start)
    .flatMap((v) => stepPoints(v.start, v.end - v.start, v.busbw, offsetMs));
}

// Draws shaded windows [{start_s, end_s, label, cls, testid?}] and markers [{t_s, label, cls,
// testid?}] over u.over.
export function drawOverlays(u, overlays) {
  const layer = u.over.querySelector('.fc-overlays') || u.over.appendChild(el('div', { class: 'fc-overlays' }));
  layer.replaceChildren();
  const width = u.over.clientWidth;
  for (const w of overlays.windows || []) {
    let left = u.valToPos(w.start_s, 'x');
    let right = u.valToPos(w.end_s === null || w.end_s === undefined ? u.scales.x.max : w.end_s, 'x');
    if (!(right > 0) || !(left < width)) continue;
    left = Math.max(0, left);
    right = Math.min(width, right);
    layer.append(el('div', {
      class: `fc-window ${w.cls || 'fault'}`, testid: w.testid || 'fault-window',
      style: `left:${left}px;width:${Math.max(2, right - left)}px`, title: w.title || w.label,
    }, el('span', { class: 'fc-window-label' }, w.label)));
  }
  for (const m of overlays.markers || []) {
    const x = u.valToPos(m.t_s, 'x');
    if (!(x >= 0 && x <= width)) continue;
    layer.append(el('div', { class: `fc-marker ${m.cls || ''}`, testid: m.testid || 'event-marker', style: `left:${x}px`, title: m.label }));
  }
}

// Plots that share one x axis (the run page's busbw and telemetry plots): the cursor follows
// across them (uPlot's cursor sync) and zooming one zooms the others. The leader's range is the
// one a follower takes when it (re)scales on new data; a zoom in either is applied to both.
export function xLink(key = 'fc-x') {
  const plots = new Set();
  let leader = null;
  let busy = false;
  return {
    key,
    add(u, lead = false) { plots.add(u); if (lead) leader = u; },
    remove(u) { plots.delete(u); if (leader === u) leader = null; },
    // The leader's x range [min, max], or null (no leader, or it has no data yet).
    leaderRange(u) {
      if (!leader || leader === u) return null;
      const { min, max } = leader.scales.x;
      return min === null || min === undefined || max === null || max === undefined ? null : [min, max];
    },
    // uPlot setScale hook: pass an x change on to the other plots.
    scaleChanged(u, scaleKey) {
      if (scaleKey !== 'x' || busy) return;
      const { min, max } = u.scales.x;
      if (min === null || min === undefined || max === null || max === undefined) return;
      busy = true;
      try {
        for (const other of plots) {
          if (other !== u && (other.scales.x.min !== min || other.scales.x.max !== max)) other.setScale('x', { min, max });
        }
      } finally {
        busy = false;
      }
    },
  };
}

// A busbw plot in `container`. series: [{label, color?, dash?}]; data: uPlot data.
// xMax(): seconds the x axis must reach even without samples there (a live run's elapsed time:
// during a link-down no iteration completes, yet the stall and the active fault must show).
// link: an xLink this plot leads (optional). Returns {update(data, overlays), destroy()}.
export function busbwPlot(container, series, data, overlays, { height = 300, xLabel = 'time since run start (s)', xMax = () => null, link = null } = {}) {
  let current = overlays || {};
  const width = () => Math.max(300, container.clientWidth || 900);
  const opts = {
    width: width(),
    height,
    scales: { x: { time: false, range: (u, min, max) => [min, Math.max(max, xMax() ?? max)] } },
    axes: [
      { label: xLabel, stroke: '#444' },
      { label: 'busbw (GB/s)', stroke: '#444', size: 60, values: (u, ticks) => ticks.map((v) => v.toFixed(3)) },
    ],
    series: [
      { label: 't (s)', value: (u, v) => (v === null || v === undefined ? '–' : v.toFixed(3)) },
      ...series.map((s, i) => ({
        label: s.label,
        stroke: s.color || RANK_COLORS[i % RANK_COLORS.length],
        width: 1.5,
        dash: s.dash,
        spanGaps: true,
        points: { show: false },
        value: (u, v) => (v === null || v === undefined ? '–' : `${v.toFixed(3)} GB/s`),
      })),
    ],
    cursor: { drag: { x: true, y: false }, ...(link ? { sync: { key: link.key } } : {}) },
    hooks: {
      draw: [(u) => drawOverlays(u, current)],
      ...(link ? { setScale: [(u, key) => link.scaleChanged(u, key)] } : {}),
    },
  };
  const plot = new uPlot(opts, data, container);
  if (link) link.add(plot, true);
  const onResize = () => plot.setSize({ width: width(), height });
  window.addEventListener('resize', onResize);
  return {
    update(newData, newOverlays) {
      if (newOverlays) current = newOverlays;
      plot.setData(newData);
    },
    destroy() {
      window.removeEventListener('resize', onResize);
      if (link) link.remove(plot);
      plot.destroy();
    },
  };
}

// A score-over-time plot: points = [[wall_ms, score], ...].
export function scorePlot(container, points, { height = 220 } = {}) {
  const width = () => Math.max(300, container.clientWidth || 900);
  const data = [points.map((p) => p[0] / 1000), points.map((p) => p[1])];
  const plot = new uPlot({
    width: width(),
    height,
    scales: { x: { time: true }, y: { range: [0, 100] } },
    axes: [{ stroke: '#444' }, { label: 'score', stroke: '#444' }],
    series: [{}, { label: 'score', stroke: '#16794c', width: 1.5, points: { show: true, size: 6 }, spanGaps: true }],
  }, data, container);
  const onResize = () => plot.setSize({ width: width(), height });
  window.addEventListener('resize', onResize);
  return { destroy() { window.removeEventListener('resize', onResize); plot.destroy(); } };
}

export { RANK_COLORS };
