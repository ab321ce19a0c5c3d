// What the run page's "Traffic and RDMA counters" panel plots, from the store telemetry.js keeps:
// a traffic fault's generators' goodput, so that who took how much of a link shows over time, and
// the rate of one RDMA port counter, by default the error counter that grew most. Pure, like
// telemetry.js, so that node checks it without a browser (tests/browser/dashboard_test.mjs).
import { SourceType, counterGrowth, counterRates, metricsOf, roleOf, seriesOf, sourcesOf } from './telemetry.js';

// A traffic generator is read at its fault's health checks, about once a second: a few missed
// checks still give a rate (its mean), a longer silence is a gap.
export const TRAFFIC_MAX_INTERVAL_MS = 5000;
// RDMA ports are read every 500 ms (docs/api.md): an interval of five readings is a gap.
export const RDMA_MAX_INTERVAL_MS = 2500;

// How the words of the kernel's hw_counters names (rxe, mlx5) begin when they count trouble
// rather than traffic: errors, sequence errors, retries, duplicates, RNR NAKs, congestion
// notifications (cnp, cnps), ECN marks, timeouts. Matched at the start of a word between
// underscores, not anywhere: rxe's ack_deferred (acks put off, not an error) has "err" inside.
const TROUBLE_WORDS = ['err', 'seq', 'retry', 'duplicate', 'cnp', 'ecn', 'rnr', 'timeout'];

export function isTroubleCounter(name) {
  return name.split('_').some((word) => TROUBLE_WORDS.some((start) => word.startsWith(start)));
}

// The traffic fault's generators and sinks, sorted by name (a source's sink sorts after it).
export function trafficSources(store) {
  return sourcesOf(store, SourceType.TRAFFIC);
}

export function rdmaPorts(store) {
  return sourcesOf(store, SourceType.RDMA_PORT);
}

export function isSink(store, source) {
  return roleOf(store, source) === 'sink';
}

// A generator's goodput in Mbit/s: the rate of what it sent, or for a sink of what it received.
export function trafficGoodputPoints(store, source) {
  const s = seriesOf(store, source, isSink(store, source) ? 'received_bytes' : 'sent_bytes');
  return s ? counterRates(s.t_ms, s.values, 8 / 1e6, TRAFFIC_MAX_INTERVAL_MS) : [];
}

// Every counter any of `ports` has, sorted (the kernel's names; a device may have more than another).
export function rdmaCounters(store, ports) {
  return [...new Set(ports.flatMap((port) => metricsOf(store, port)))].sort();
}

// The counter shown before the user picks one: of the trouble counters, the one that grew most
// over the run (summed over `ports`); when none grew, "sent_pkts" (that traffic flowed), else
// the first; null when the ports have no counters.
export function defaultRdmaCounter(store, ports) {
  const counters = rdmaCounters(store, ports);
  if (!counters.length) return null;
  const growth = (counter) => ports.reduce((sum, port) => {
    const s = seriesOf(store, port, counter);
    return sum + (s ? counterGrowth(s.values) : 0);
  }, 0);
  let best = null;
  let bestGrowth = 0;
  for (const counter of counters.filter(isTroubleCounter)) {
    const g = growth(counter);
    if (g > bestGrowth) [best, bestGrowth] = [counter, g];
  }
  if (best) return best;
  return counters.includes('sent_pkts') ? 'sent_pkts' : counters[0];
}

// One port's counter per second.
export function rdmaRatePoints(store, port, counter) {
  const s = seriesOf(store, port, counter);
  return s ? counterRates(s.t_ms, s.values, 1, RDMA_MAX_INTERVAL_MS) : [];
}
