// Text of the recovery table's congestion cells, from one step of run.result.analysis.steps
// (docs/api.md). Pure, so that node checks it too; "–" wherever the analysis has nothing.

// 12522 -> "12 522": a no-break space between groups of three digits, so that a count is never
// split over two lines of a narrow cell.
export const GROUP_SEPARATOR = '\u00a0';
export function fmtCount(value) {
  if (value === null || value === undefined || !Number.isFinite(Number(value))) return '–';
  return String(Math.round(Number(value))).replace(/\B(?=(\d{3})+(?!\d))/g, GROUP_SEPARATOR);
}

// Iteration times keep a decimal while they are short: 36.5 ms, 1585 ms.
function fmtIterMs(ms) {
  return ms < 100 ? ms.toFixed(1) : String(Math.round(ms));
}

// "36.5 → 1585 ms ×43.5": the baseline's p99 iteration time, the fault's, and the slowdown.
export function fmtP99Iteration(step) {
  const base = step && step.baseline_iteration_ms;
  const fault = step && step.fault_iteration_ms;
  const has = (t) => t && t.iterations > 0 && Number.isFinite(t.p99);
  if (!has(base) && !has(fault)) return '–';
  const text = `${has(base) ? fmtIterMs(base.p99) : '–'} → ${has(fault) ? fmtIterMs(fault.p99) : '–'} ms`;
  const slowdown = step.p99_slowdown;
  return slowdown === null || slowdown === undefined ? text : `${text} ×${slowdown.toFixed(1)}`;
}

// "sw0/p3/best_effort: 12 522 drops, 0 marks, peak 127 KiB".
export function fmtHottestQueue(queue) {
  if (!queue) return '–';
  return `${queue.source}: ${fmtCount(queue.drops)} drops, ${fmtCount(queue.ecn_marked)} marks, ` +
    `peak ${fmtCount((queue.peak_backlog_bytes ?? 0) / 1024)} KiB`;
}

const isNumber = (v) => v !== null && v !== undefined && Number.isFinite(Number(v));

// The step's most paused queue (PFC), and what its watchdog did:
// "sw0/p1/lossless: paused 2 987 ms, 4 211 frames; watchdog +201 ms (job moved +215 ms),
// restored 203 ms after the fault, 37 dropped (+1 more queue)". The watchdog's detection and the
// job's first progress count from the fault's start, the restoration from its end.
export function fmtPausedQueues(step) {
  const queues = (step && step.paused_queues) || [];
  if (!queues.length) return '–';
  const q = queues[0];
  let text = `${q.source}: paused ${fmtCount(q.paused_ms)} ms, ${fmtCount(q.pause_frames)} frames`;
  if (isNumber(q.watchdog_detected_after_ms)) {
    text += `; watchdog +${fmtCount(q.watchdog_detected_after_ms)} ms`;
    if (isNumber(step.time_to_first_progress_ms)) text += ` (job moved +${fmtCount(step.time_to_first_progress_ms)} ms)`;
    if (isNumber(q.watchdog_restored_after_ms)) text += `, restored ${fmtCount(q.watchdog_restored_after_ms)} ms after the fault`;
    if (q.watchdog_dropped_frames > 0) text += `, ${fmtCount(q.watchdog_dropped_frames)} dropped`;
  }
  if (queues.length > 1) text += ` (+${queues.length - 1} more ${queues.length > 2 ? 'queues' : 'queue'})`;
  return text;
}

// An InfiniBand step's subnet figures (scenarios/subnet_recovery.h, docs/scoring.md):
// "new master +3.6 s (…100005); SA out 3.0 s; routable again +14 ms (4 pairs broken);
// 20 LFT entries rewritten (63 %), 0 differ at the end". Only what happened is named; a step
// whose subnet saw nothing says so, and a step without subnet figures (Ethernet) is "–".
export function fmtSubnet(step) {
  const s = step && step.subnet;
  if (!s) return '–';
  const parts = [];
  const secs = (ms) => (ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`);
  if (isNumber(s.time_to_new_master_ms)) {
    const guid = s.new_master ? ` (…${String(s.new_master).slice(-6)})` : '';
    parts.push(`new master +${secs(s.time_to_new_master_ms)}${guid}` +
      (s.master_returned === false ? ', original master not back' : ''));
  }
  if (s.sa_restored === false) parts.push(`SA still out after ${secs(s.sa_outage_ms)}`);
  else if (s.sa_outage_ms > 0) parts.push(`SA out ${secs(s.sa_outage_ms)}`);
  const pairs = (n) => `${fmtCount(n)} ${n === 1 ? 'pair' : 'pairs'}`;
  if (s.routes_restored === false) parts.push(`${pairs(s.unroutable_pairs)} left unroutable`);
  else if (isNumber(s.time_to_routable_ms)) {
    parts.push(`routable again +${secs(s.time_to_routable_ms)} (${pairs(s.unroutable_pairs)} broken)`);
  }
  if (s.lft_entries_changed > 0) {
    parts.push(`${fmtCount(s.lft_entries_changed)} LFT entries rewritten ` +
      `(${Math.round(100 * (s.lft_share_changed || 0))} %), ${fmtCount(s.lft_entries_differ_after)} differ at the end`);
  }
  if (s.lid_changes > 0) parts.push(`${fmtCount(s.lid_changes)} LID ${s.lid_changes === 1 ? 'move' : 'moves'}`);
  return parts.length ? parts.join('; ') : 'no change seen';
}
