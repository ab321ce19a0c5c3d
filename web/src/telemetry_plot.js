// One uPlot of switch-queue telemetry under the run's busbw plot: the same x axis (seconds since
// the run's origin, linked to the busbw plot through an xLink), the same fault and baseline
// overlays, and y axes of the busbw plot's width (60 px), so that one y axis on the left lines
// the plotting area up with the busbw plot's.
import uPlot from './vendor/uPlot.esm.js';
import { drawOverlays } from './plot.js';

const fmt = (v, unit) => (v === null || v === undefined ? '–' : `${v.toFixed(v < 10 ? 2 : v < 1000 ? 1 : 0)} ${unit}`);

// axes: [{scale, label, unit}] (the first on the left, a second on the right); series: [{label,
// scale, color, dash?}]; data: [xs, ...ys] (alignOnX). Returns {update(data, overlays), destroy()}.
export function telemetryPlot(container, { axes, series, data, overlays, link = null, height = 200 }) {
  let current = overlays || {};
  const width = () => Math.max(300, container.clientWidth || 900);
  const unitOf = new Map(axes.map((a) => [a.scale, a.unit]));
  const opts = {
    width: width(),
    height,
    scales: {
      x: { time: false, range: (u, min, max) => (link && link.leaderRange(u)) || [min, max] },
      ...Object.fromEntries(axes.map((a) => [a.scale, { range: (u, min, max) => [0, max > 0 ? max * 1.05 : 1] }])),
    },
    axes: [
      { label: 'time since run start (s)', stroke: '#444' },
      ...axes.map((a, i) => ({
        scale: a.scale, label: a.label, stroke: '#444', size: 60, side: i === 0 ? 3 : 1,
        grid: { show: i === 0 },
      })),
    ],
    series: [
      { label: 't (s)', value: (u, v) => (v === null || v === undefined ? '–' : v.toFixed(3)) },
      ...series.map((s) => ({
        label: s.label,
        scale: s.scale,
        stroke: s.color,
        width: 1.5,
        dash: s.dash,
        spanGaps: false,  // a null is a gap (counter reset, switch not read); undefined is spanned
        points: { show: false },
        value: (u, v) => fmt(v, unitOf.get(s.scale)),
      })),
    ],
    cursor: { drag: { x: true, y: false }, ...(link ? { sync: { key: link.key } } : {}) },
    hooks: {
      draw: [(u) => drawOverlays(u, current)],
      ...(link ? { setScale: [(u, key) => link.scaleChanged(u, key)] } : {}),
    },
  };
  const plot = new uPlot(opts, data, container);
  if (link) link.add(plot);
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
