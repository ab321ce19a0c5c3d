// A run's telemetry (GET /v1/runs/ID/telemetry) kept in one store and turned into plottable
// points; the switch queues' points are built here, the traffic generators' and RDMA ports' in
// host_telemetry.js. Pure: no DOM, no fetch, so that node can check it without a browser
// (tests/browser/dashboard_test.mjs).
// Counters (tx_bytes, drops, ecn_marked, ...) are cumulative since the lab made the queue: what is
// plotted is the rate over each sampling interval. A counter that goes down (the queue was made
// again) or an interval far longer than the sampling period (the switch could not be read) gives
// no rate at all: a gap in the line, never a made-up value.

// Twice the sampler's 100 ms, plus slack for a late read: a longer interval is a gap.
export const MAX_INTERVAL_MS = 1000;

// The API's source types (docs/api.md, "type" of a series). A series without one names a source
// this dashboard does not know (a later server's): it is kept in the store but never plotted.
export const SourceType = Object.freeze({
  SWITCH_QUEUE: 'switch_queue',
  TRAFFIC: 'traffic',
  RDMA_PORT: 'rdma_port',
});

const key = (source, metric) => `${source}\n${metric}`;

// Merges `series` (the API's shape) into `store` (a Map filled by earlier calls), keeping each
// series' points sorted by t_ms and each t_ms once, so that overlapping incremental reads
// (after_ms) are harmless. Returns the number of points that were new.
export function mergeTelemetry(store, series) {
  let added = 0;
  for (const s of series || []) {
    const k = key(s.source, s.metric);
    let entry = store.get(k);
    if (!entry) {
      entry = { source: s.source, type: s.type ?? null, role: s.role ?? null, metric: s.metric, kind: s.kind,
        points: new Map() };
      store.set(k, entry);
    }
    const n = Math.min(s.t_ms.length, s.values.length);
    for (let i = 0; i < n; i++) {
      if (!entry.points.has(s.t_ms[i])) added++;
      entry.points.set(s.t_ms[i], s.values[i]);
    }
  }
  return added;
}

// One stored series as sorted arrays {t_ms, values}, or null when the store has none.
export function seriesOf(store, source, metric) {
  const entry = store.get(key(source, metric));
  if (!entry) return null;
  const t = [...entry.points.keys()].sort((a, b) => a - b);
  return { t_ms: t, values: t.map((x) => entry.points.get(x)) };
}

// Every source in the store, or only those of one SourceType, sorted.
export function sourcesOf(store, type = undefined) {
  const entries = [...store.values()].filter((e) => type === undefined || e.type === type);
  return [...new Set(entries.map((e) => e.source))].sort();
}

// The metrics stored for one source, sorted.
export function metricsOf(store, source) {
  return [...store.values()].filter((e) => e.source === source).map((e) => e.metric).sort();
}

// A traffic source's role as the API gave it: "source" (a sending host) or "sink"; null for a
// source that has none.
export function roleOf(store, source) {
  for (const e of store.values()) if (e.source === source) return e.role;
  return null;
}

// The latest t_ms of any series (for the next after_ms), or null.
export function lastTelemetryMs(store) {
  let last = null;
  for (const e of store.values()) for (const t of e.points.keys()) if (last === null || t > last) last = t;
  return last;
}

// Rates of a cumulative counter: [[t_s, rate | null], ...], one point at the end of each interval,
// rate = delta * scale per second. null where the counter went down or the interval is longer
// than maxIntervalMs; intervals of zero or negative length are skipped.
export function counterRates(tMs, values, scale = 1, maxIntervalMs = MAX_INTERVAL_MS) {
  const out = [];
  for (let i = 1; i < Math.min(tMs.length, values.length); i++) {
    const dt = tMs[i] - tMs[i - 1];
    if (!(dt > 0)) continue;
    const dv = values[i] - values[i - 1];
    const usable = dv >= 0 && dt <= maxIntervalMs && Number.isFinite(dv);
    out.push([tMs[i] / 1000, usable ? (dv * scale * 1000) / dt : null]);
  }
  return out;
}

// A gauge as it was read: [[t_s, value * scale], ...].
export function gaugePoints(tMs, values, scale = 1) {
  const out = [];
  for (let i = 0; i < Math.min(tMs.length, values.length); i++) out.push([tMs[i] / 1000, values[i] * scale]);
  return out;
}

// Several series of [x, y] points on one x axis (uPlot's shape: [xs, ys0, ys1, ...]). xs is the
// sorted union; a series without a point at some x has undefined there (uPlot draws through it),
// while a null the series itself carries stays null (uPlot breaks the line: a gap).
export function alignOnX(seriesPoints) {
  const xs = [...new Set(seriesPoints.flatMap((points) => points.map((p) => p[0])))].sort((a, b) => a - b);
  const index = new Map(xs.map((x, i) => [x, i]));
  return [xs, ...seriesPoints.map((points) => {
    const ys = new Array(xs.length).fill(undefined);
    for (const [x, y] of points) ys[index.get(x)] = y;
    return ys;
  })];
}

// What is plotted for one queue: tx in Mbit/s, backlog in KiB, drops and ECN marks per second.
export function queuePlotPoints(store, source) {
  const rates = (metric, scale) => {
    const s = seriesOf(store, source, metric);
    return s ? counterRates(s.t_ms, s.values, scale) : [];
  };
  const backlog = seriesOf(store, source, 'backlog_bytes');
  return {
    tx_mbps: rates('tx_bytes', 8 / 1e6),
    backlog_kib: backlog ? gaugePoints(backlog.t_ms, backlog.values, 1 / 1024) : [],
    drops_per_s: rates('drops', 1),
    marks_per_s: rates('ecn_marked', 1),
  };
}

// How much a counter grew over the whole series (resets: only the growth between them counts).
export function counterGrowth(values) {
  let total = 0;
  for (let i = 1; i < values.length; i++) if (values[i] > values[i - 1]) total += values[i] - values[i - 1];
  return total;
}

// The queues shown before the user picks any: each step's hottest queue (the analysis's), in step
// order; without one (a live run, or no queue suffered), the queue that dropped most, else the one
// that sent most, so that a plot is never empty while there is telemetry. Switch queues only: the
// traffic generators and RDMA ports in the same store have a panel of their own.
export function defaultSources(steps, store) {
  const present = new Set(sourcesOf(store, SourceType.SWITCH_QUEUE));
  const hottest = [];
  for (const s of steps || []) {
    const src = s && s.hottest_queue && s.hottest_queue.source;
    if (src && present.has(src) && !hottest.includes(src)) hottest.push(src);
  }
  if (hottest.length || !present.size) return hottest;
  const growth = (src, metric) => { const s = seriesOf(store, src, metric); return s ? counterGrowth(s.values) : 0; };
  const ranked = [...present].sort((a, b) =>
    growth(b, 'drops') - growth(a, 'drops') || growth(b, 'tx_bytes') - growth(a, 'tx_bytes') || a.localeCompare(b));
  return [ranked[0]];
}
