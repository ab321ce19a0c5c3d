// Where a finished run's busbw plot must reach on its x axis, from its overlays (views/run.js
// overlaysFor): the last fault window's end and the workload's end (rank_done,
// workload_stopped), even when the ring stalled until then and no sample lies there: that stall
// is the finding, and the fault window must stay in view beside it. null when there is neither.
// Pure, so that node checks it too.
export function finishedXEnd({ windows = [], markers = [] } = {}) {
  const ends = [
    ...windows.map((w) => w.end_s),
    ...markers.filter((m) => m.cls === 'ev-rank_done' || m.cls === 'ev-workload_stopped').map((m) => m.t_s),
  ].filter((v) => v !== null && v !== undefined && Number.isFinite(v));
  return ends.length ? Math.max(...ends) : null;
}
