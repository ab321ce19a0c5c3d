// One run's telemetry (GET /v1/runs/ID/telemetry) read into one store (telemetry.js) that every
// panel of the run page reads its own source types from: one request per poll however many
// panels there are. Read whole once, or (incremental) from a little before the last point seen.
import { get } from './api.js';
import { lastTelemetryMs, mergeTelemetry } from './telemetry.js';

// Incremental reads start this far before the last point seen, so that a point stored after a
// later one is not missed (mergeTelemetry drops the points read twice): switch and RDMA points
// are stored in batches of about a second, a traffic generator's as soon as it is read, so the
// newest points of two sources can be stored more than a second apart.
const REREAD_MS = 2000;

// Returns {store, load(incremental, live)}. load resolves to what a panel needs to redraw:
// {added (new points), first (the first answer, even an error), live, error (an ApiError or
// null)}, or to null when the read was refused for want of a login (the app goes to #/login).
export function telemetryFeed(runId) {
  const store = new Map();
  let answered = false;

  async function load(incremental, live) {
    const last = lastTelemetryMs(store);
    const after = incremental && last !== null ? `?after_ms=${Math.max(0, last - REREAD_MS)}` : '';
    let added = 0;
    let error = null;
    try {
      const reply = await get(`/v1/runs/${encodeURIComponent(runId)}/telemetry${after}`);
      added = mergeTelemetry(store, reply.series);
    } catch (e) {
      if (e.status === 401) return null;
      error = e;
    }
    const first = !answered;
    answered = true;
    return { added, first, live, error };
  }

  return { store, load };
}
