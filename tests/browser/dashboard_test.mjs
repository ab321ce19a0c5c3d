// Browser tier (issue 5): Debian's chromium, driven by playwright-core, against `fabric-chaos serve
// --with-lab 2` and the built dashboard (web/dist). One run is started from the UI and watched live,
// a second and third through the API for the compare view and the viewer check. The Faults page
// (issue 9) is checked with a fault left behind by a finished run (reverted with "Revert now", the
// kernel and the journal as witnesses) and with a running run's fault (offered as an abort). The
// Fabrics page (issue 10 §0) lists the star lab and draws and tables its switch, hosts and links.
// The run page's switch telemetry panel: the star lab models no ports, so the finished run first
// says it has none; telemetry rows (and the analysis's hottest queue) are then written into serve's
// database as a modelled fabric's sampler would have, and the panel plots them on the busbw plot's
// x axis; the live viewer run's telemetry is seeded in two batches and followed with after_ms.
// The traffic and RDMA counters panel under it: none on the star lab; then an incast's generators
// and a Soft-RoCE port are seeded into the same table and plotted there, from the same read.
// The pure helpers behind them (web/src/telemetry.js, host_telemetry.js, step_cells.js, x_extent.js) are
// checked in node first.
// Screenshots go to $FC_ARTIFACTS/browser (or <build>/artifacts/browser). Missing prerequisites
// (root, chromium, sqlite3, web/node_modules, web/dist) skip with exit code 77, or fail when CI=true.
// Run by ctest (tests/browser/CMakeLists.txt) with FC_BINARY and FC_SOURCE_DIR set.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import {
  closeSync, cpSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const kChromium = process.env.FC_CHROMIUM || '/usr/bin/chromium';
const kSqlite3 = process.env.FC_SQLITE3 || '/usr/bin/sqlite3';
// The namespace lab's switch and h1's / h0's ports on it (README: host hN is cabled to pN of br0).
const kSwitchNs = 'fcl-sw0';
const kViewport = { width: 1280, height: 800 };
const kScenario = 'browser-flap';
const kInProgress = new Set(['queued', 'preparing', 'baseline', 'injecting', 'recovering', 'analysing']);
const kFinal = new Set(['passed', 'failed', 'aborted', 'interrupted', 'error']);
// The run page's rank colours and the compare view's A/B colours (web/src/plot.js, compare.js).
const kRankColors = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728'];
// What the run page's traffic and RDMA panel says for a finished run without either
// (web/src/views/run_host_telemetry.js).
const kNoHostTelemetry =
  'no traffic or RDMA counters (the run has no traffic fault, incast or hot_spot, and its hosts have no RDMA devices)';
const kColorA = '#1f77b4';
const kColorB = '#d62728';
// A short link_flap: 2 s baseline, h1's switch port down 1.5 s, 2 s recovery (docs/scenarios.md).
const kScenarioDoc = {
  version: 1,
  name: kScenario,
  description: 'Browser tier: h1 switch port down 1.5 s between a 2 s baseline and a 2 s recovery.',
  workload: { transport: 'tcp', message_bytes: 262144, compute_ms: 5 },
  baseline_ms: 2000,
  steps: [{ kind: 'link_flap', target: { host: 'h1', side: 'switch' }, at_ms: 0, params: { down_ms: 1500 } }],
  recovery_ms: 2000,
  max_duration_ms: 60000,
  gates: { min_score: 10, require_survival: true },
};

const here = dirname(fileURLToPath(import.meta.url));
const sourceDir = resolve(process.env.FC_SOURCE_DIR || join(here, '..', '..'));
const binary = process.env.FC_BINARY || '';
const inCi = process.env.CI === 'true';
const artifacts = join(process.env.FC_ARTIFACTS ||
  join(process.env.FC_BUILD_DIR || (binary ? dirname(dirname(binary)) : process.cwd()), 'artifacts'), 'browser');

// --- the dashboard's pure helpers, in node (no browser, so checked even where the tier skips) ---
// web/src/telemetry.js (rates from cumulative counters, gaps, alignment, source types),
// web/src/host_telemetry.js (traffic goodput, the RDMA counter shown) and web/src/step_cells.js
// (the recovery table's congestion cells) import nothing from the DOM. A failure here fails the
// test before anything is brought up.
async function checkPureHelpers() {
  const telemetryJs = await import(join(sourceDir, 'web', 'src', 'telemetry.js'));
  const hostTelemetryJs = await import(join(sourceDir, 'web', 'src', 'host_telemetry.js'));
  const cells = await import(join(sourceDir, 'web', 'src', 'step_cells.js'));
  const { counterRates, gaugePoints, alignOnX, mergeTelemetry, seriesOf, sourcesOf, lastTelemetryMs, defaultSources,
    queuePlotPoints, SourceType } = telemetryJs;
  const { trafficSources, rdmaPorts, trafficGoodputPoints, rdmaCounters, defaultRdmaCounter, rdmaRatePoints,
    isTroubleCounter } = hostTelemetryJs;
  const rateCases = [
    ['steady 10 Mbit/s, then idle', [0, 100, 200, 300], [0, 125000, 250000, 250000], 8 / 1e6, [[0.1, 10], [0.2, 10], [0.3, 0]]],
    ['a counter that goes back (queue made again) is a gap', [0, 100, 200, 300], [100, 200, 50, 150], 1,
      [[0.1, 1000], [0.2, null], [0.3, 1000]]],
    ['an interval longer than 1 s (switch not read) is a gap', [0, 100, 5000], [0, 10, 20], 1, [[0.1, 100], [5, null]]],
    ['a repeated t_ms is skipped', [0, 100, 100, 200], [0, 10, 10, 20], 1, [[0.1, 100], [0.2, 100]]],
    ['uneven intervals: per second', [1000, 1250, 1300], [0, 50, 60], 1, [[1.25, 200], [1.3, 200]]],
    ['one point: no rate', [0], [5], 1, []],
    ['no points', [], [], 1, []],
  ];
  for (const [name, t, v, scale, want] of rateCases) {
    const got = counterRates(t, v, scale).map(([x, y]) => [x, y === null ? null : Number(y.toFixed(9))]);
    assert.deepEqual(got, want, `counterRates: ${name}`);
  }
  assert.deepEqual(gaugePoints([0, 100], [2048, 130048], 1 / 1024), [[0, 2], [0.1, 127]], 'gaugePoints: bytes to KiB');
  assert.deepEqual(alignOnX([[[0, 1], [1, 2]], [[1, null], [2, 3]], []]),
    [[0, 1, 2], [1, 2, undefined], [undefined, null, 3], [undefined, undefined, undefined]],
  'alignOnX: missing points are undefined (spanned), a series\' own null stays (gap)');
  assert.deepEqual(alignOnX([]), [[]], 'alignOnX: nothing');

  // Incremental reads overlap (after_ms re-reads a little): every t_ms once, sorted.
  const store = new Map();
  const wire = (source, metric, t, values) => ({ source, type: 'switch_queue', metric,
    kind: metric === 'backlog_bytes' ? 'gauge' : 'counter', t_ms: t, values });
  assert.equal(mergeTelemetry(store, [wire('sw0/p1/best_effort', 'drops', [0, 100, 200], [0, 0, 5])]), 3);
  assert.equal(mergeTelemetry(store, [wire('sw0/p1/best_effort', 'drops', [200, 300], [5, 9]),
    wire('sw0/p0/lossless', 'drops', [100, 300], [0, 0])]), 3, 'mergeTelemetry: a re-read point is not new');
  assert.equal(mergeTelemetry(store, [wire('sw0/p0/lossless', 'drops', [200], [0])]), 1, 'a late point of one source');
  assert.deepEqual(seriesOf(store, 'sw0/p1/best_effort', 'drops'), { t_ms: [0, 100, 200, 300], values: [0, 0, 5, 9] });
  assert.deepEqual(seriesOf(store, 'sw0/p0/lossless', 'drops'), { t_ms: [100, 200, 300], values: [0, 0, 0] });
  assert.equal(seriesOf(store, 'sw0/p0/lossless', 'tx_bytes'), null);
  assert.deepEqual(sourcesOf(store), ['sw0/p0/lossless', 'sw0/p1/best_effort']);
  assert.equal(lastTelemetryMs(store), 300);
  assert.equal(lastTelemetryMs(new Map()), null);
  assert.deepEqual(queuePlotPoints(store, 'sw0/p1/best_effort'),
    { tx_mbps: [], backlog_kib: [], drops_per_s: [[0.1, 0], [0.2, 50], [0.3, 40]], marks_per_s: [] });

  // The queues shown by default: the steps' hottest (present ones, once, in step order), else
  // the queue that dropped most.
  const hot = (source) => ({ hottest_queue: source === null ? null : { source } });
  assert.deepEqual(defaultSources([hot('sw0/p0/lossless'), hot('sw0/p1/best_effort'), hot('sw0/p0/lossless')], store),
    ['sw0/p0/lossless', 'sw0/p1/best_effort']);
  assert.deepEqual(defaultSources([hot('sw9/p9/lossless'), hot(null)], store), ['sw0/p1/best_effort'],
    'a hottest queue without telemetry: the one that dropped most');
  assert.deepEqual(defaultSources(undefined, store), ['sw0/p1/best_effort']);
  assert.deepEqual(defaultSources([hot('sw0/p1/best_effort')], new Map()), []);

  // One store holds every source type (one read for both run-page panels); each panel takes its
  // own by the API's "type", and a series without one (a source this dashboard does not know) is
  // plotted by neither.
  const traffic = (source, role, metric, t, values) => ({ source, type: 'traffic', host: source.split('/')[2],
    fault_kind: 'incast', role, metric, kind: metric === 'flows_connected' ? 'gauge' : 'counter', t_ms: t, values });
  const rdma = (source, metric, values, stepMs = 100) => ({ source, type: 'rdma_port', host: source.split('/')[1],
    device: source.split('/')[2], port: Number(source.split('/')[3]), metric, kind: 'counter',
    t_ms: values.map((_, i) => i * stepMs), values });
  const mixed = new Map();
  mergeTelemetry(mixed, [
    wire('sw0/p3/best_effort', 'drops', [0, 100], [0, 4]),
    wire('sw0/p2/lossless', 'drops', [0, 100], [0, 1]),
    traffic('traffic/incast/h0', 'source', 'sent_bytes', [0, 1000], [0, 9e9]),
    traffic('traffic/incast/h0', 'source', 'flows_connected', [0, 1000], [4, 4]),
    traffic('traffic/incast/h3/sink', 'sink', 'received_bytes', [0, 1000], [0, 9e9]),
    rdma('rdma/h3/rxe0/1', 'rcvd_seq_err', [0, 9000]),
    rdma('rdma/h3/rxe0/1', 'drops', [0, 9000]),
    { source: 'sw9/p0/lossless/new', metric: 'drops', kind: 'counter', t_ms: [0, 100], values: [0, 9e9] },
  ]);
  const classCases = [
    [SourceType.SWITCH_QUEUE, 'switch_queue', ['sw0/p2/lossless', 'sw0/p3/best_effort']],
    [SourceType.TRAFFIC, 'traffic', ['traffic/incast/h0', 'traffic/incast/h3/sink']],
    [SourceType.RDMA_PORT, 'rdma_port', ['rdma/h3/rxe0/1']],
  ];
  for (const [type, word, want] of classCases) {
    assert.equal(type, word, 'the API\'s word for the type');
    assert.deepEqual(sourcesOf(mixed, type), want, `sourcesOf(${type})`);
  }
  assert.deepEqual(trafficSources(mixed), classCases[1][2]);
  assert.deepEqual(rdmaPorts(mixed), classCases[2][2]);
  assert.equal(sourcesOf(mixed).length, 2 + 2 + 1 + 1, 'the untyped series is kept in the store, in no type');
  // The switch panel's default: its queues only, whatever dropped or was named elsewhere.
  assert.deepEqual(defaultSources([], mixed), ['sw0/p3/best_effort'],
    'an RDMA port\'s or an untyped source\'s larger "drops" do not make them a queue');
  assert.deepEqual(defaultSources([hot('traffic/incast/h0'), hot('rdma/h3/rxe0/1')], mixed), ['sw0/p3/best_effort'],
    'a hottest "queue" that is a traffic source or an RDMA port is not shown as one');
  const hostOnly = new Map();
  mergeTelemetry(hostOnly, [traffic('traffic/incast/h0', 'source', 'sent_bytes', [0, 1000], [0, 5]),
    rdma('rdma/h3/rxe0/1', 'sent_pkts', [0, 5])]);
  assert.deepEqual(defaultSources(undefined, hostOnly), [], 'no switch queue: the switch panel shows none');

  // Goodput from a generator's cumulative bytes, read about once a second: Mbit/s at the end of
  // each interval; a source's sent_bytes, a sink's received_bytes.
  const goodputCases = [
    ['5 MB a second is 40 Mbit/s', [1000, 2000, 3000], [0, 5e6, 10e6], [[2, 40], [3, 40]]],
    ['idle, then 1 MB in 1.25 s', [0, 1000, 2250], [0, 0, 1e6], [[1, 0], [2.25, 6.4]]],
    ['a missed health check (2 s) is still a rate: its mean', [1000, 3000], [0, 5e6], [[3, 20]]],
    ['5 s without a reading is still a rate', [1000, 6000], [0, 5e6], [[6, 8]]],
    ['more than 5 s without a reading is a gap', [1000, 6001], [0, 5e6], [[6.001, null]]],
    ['the generator started again (its counter went back): a gap', [1000, 2000, 3000], [4e6, 1e6, 2e6], [[2, null], [3, 8]]],
    ['one reading: no rate', [1000], [5e6], []],
  ];
  for (const [name, t, v, want] of goodputCases) {
    const store1 = new Map();
    mergeTelemetry(store1, [traffic('traffic/incast/h1', 'source', 'sent_bytes', t, v),
      traffic('traffic/incast/h1', 'source', 'flows_connected', t, t.map(() => 8)),
      traffic('traffic/incast/h3/sink', 'sink', 'received_bytes', t, v)]);
    const round = (points) => points.map(([x, y]) => [x, y === null ? null : Number(y.toFixed(9))]);
    assert.deepEqual(round(trafficGoodputPoints(store1, 'traffic/incast/h1')), want, `goodput of a source: ${name}`);
    assert.deepEqual(round(trafficGoodputPoints(store1, 'traffic/incast/h3/sink')), want, `goodput of a sink: ${name}`);
  }
  assert.deepEqual(trafficGoodputPoints(mixed, 'traffic/incast/h9'), [], 'a source without readings');

  // The RDMA counter shown first: the trouble counter (error, sequence, retry, duplicate, RNR,
  // CNP, ECN, timeout) that grew most over the run, summed over the ports; else sent_pkts; else the
  // first. Counters read every 100 ms.
  const troubleCases = [
    ['rcvd_seq_err', true], ['out_of_seq_request', true], ['out_of_sequence', true], ['duplicate_request', true],
    ['retry_exceeded_err', true], ['rcvd_rnr_err', true], ['rp_cnp_handled', true], ['np_cnp_sent', true],
    ['np_ecn_marked_roce_packets', true], ['local_ack_timeout_err', true], ['send_err', true],
    ['req_cqe_error', true], ['roce_slow_restart_cnps', true],
    ['sent_pkts', false], ['rcvd_pkts', false], ['rdma_sends', false], ['rdma_recvs', false],
    ['ack_deferred', false], // "err" inside a word: acks put off, not an error
  ];
  for (const [name, want] of troubleCases) assert.equal(isTroubleCounter(name), want, `isTroubleCounter(${name})`);
  const port = (source, counters) => Object.entries(counters).map(([metric, values]) => rdma(source, metric, values));
  const counterCases = [
    ['rxe: the sequence errors of a fault window', [port('rdma/h3/rxe0/1',
      { sent_pkts: [0, 1000, 2000], rcvd_pkts: [0, 5000, 9000], rcvd_seq_err: [0, 0, 7], duplicate_request: [0, 2, 3] })],
    'rcvd_seq_err'],
    ['summed over the ports', [port('rdma/h3/rxe0/1', { rcvd_seq_err: [0, 4], retry_exceeded_err: [0, 3] }),
      port('rdma/h4/rxe0/1', { retry_exceeded_err: [0, 3] })], 'retry_exceeded_err'],
    ['a counter that went back grew by its increases only', [port('rdma/h3/rxe0/1',
      { rcvd_seq_err: [90, 0, 1], out_of_seq_request: [0, 2, 2] })], 'out_of_seq_request'],
    ['mlx5: ECN marks and CNPs are trouble, not the request counts', [port('rdma/h5/mlx5_0/1',
      { np_cnp_sent: [0, 3], np_ecn_marked_roce_packets: [0, 40], rx_write_requests: [0, 1000] })],
    'np_ecn_marked_roce_packets'],
    ['no trouble grew: sent_pkts', [port('rdma/h3/rxe0/1', { rcvd_seq_err: [5, 5], rcvd_pkts: [0, 99], sent_pkts: [0, 10] })],
      'sent_pkts'],
    ['no trouble grew, no sent_pkts: the first', [port('rdma/h5/mlx5_0/1', { rx_write_requests: [0, 9], link_downed: [0, 0],
      out_of_sequence: [0, 0] })], 'link_downed'],
    ['no RDMA ports', [], null],
  ];
  for (const [name, series, want] of counterCases) {
    const store1 = new Map();
    mergeTelemetry(store1, [...series.flat(), traffic('traffic/incast/h0', 'source', 'sent_bytes', [0, 1000], [0, 1e9]),
      wire('sw0/p0/lossless', 'drops', [0, 100], [0, 1e6])]);
    assert.equal(defaultRdmaCounter(store1, rdmaPorts(store1)), want, `defaultRdmaCounter: ${name}`);
  }
  const seqStore = new Map();
  mergeTelemetry(seqStore, counterCases[0][1].flat());
  assert.deepEqual(rdmaCounters(seqStore, rdmaPorts(seqStore)), ['duplicate_request', 'rcvd_pkts', 'rcvd_seq_err', 'sent_pkts']);
  assert.deepEqual(rdmaRatePoints(seqStore, 'rdma/h3/rxe0/1', 'rcvd_seq_err'), [[0.1, 0], [0.2, 70]], 'per second');
  assert.deepEqual(rdmaRatePoints(seqStore, 'rdma/h3/rxe0/1', 'np_cnp_sent'), [], 'a counter the port does not have');
  const slowPort = new Map();
  mergeTelemetry(slowPort, [rdma('rdma/h3/rxe0/1', 'sent_pkts', [0, 625, 3750], 2500)]);
  assert.deepEqual(rdmaRatePoints(slowPort, 'rdma/h3/rxe0/1', 'sent_pkts'), [[2.5, 250], [5, 1250]],
    'RDMA: 2.5 s between reads (five missed 500 ms readings) is still a rate');
  const silentPort = new Map();
  mergeTelemetry(silentPort, [rdma('rdma/h3/rxe0/1', 'sent_pkts', [0, 250], 2501)]);
  assert.deepEqual(rdmaRatePoints(silentPort, 'rdma/h3/rxe0/1', 'sent_pkts'), [[2.501, null]],
    'RDMA: longer than 2.5 s between reads is a gap');

  // The recovery table's cells.
  const step = (base, fault, slowdown) => ({ baseline_iteration_ms: base, fault_iteration_ms: fault, p99_slowdown: slowdown });
  const cellCases = [
    [step({ iterations: 40, p99: 36.5 }, { iterations: 3, p99: 1585 }, 1585 / 36.5), '36.5 → 1585 ms ×43.4'],
    [step({ iterations: 40, p99: 12.04 }, { iterations: 9, p99: 13.96 }, 13.96 / 12.04), '12.0 → 14.0 ms ×1.2'],
    [step({ iterations: 40, p99: 36.5 }, { iterations: 0, p99: 0 }, null), '36.5 → – ms'],
    [step(undefined, undefined, undefined), '–'],
  ];
  for (const [s, want] of cellCases) assert.equal(cells.fmtP99Iteration(s), want);
  assert.equal(cells.fmtHottestQueue({ source: 'sw0/p3/best_effort', tx_bytes: 9e6, drops: 12522, ecn_marked: 0,
    peak_backlog_bytes: 130048 }), 'sw0/p3/best_effort: 12\u00a0522 drops, 0 marks, peak 127 KiB', 'a no-break space in 12 522');
  assert.equal(cells.fmtHottestQueue(null), '–');
  assert.equal(cells.fmtCount(1234567), '1\u00a0234\u00a0567');
  assert.equal(cells.fmtCount(999), '999');
  // The PFC cell: the most paused queue, its watchdog against the job's first progress.
  const lossless = (extra) => ({ source: 'sw0/p1/lossless', paused_ms: 2987.4, pause_frames: 4211, watchdog_storms: 0,
    watchdog_dropped_frames: 0, watchdog_detected_after_ms: null, watchdog_restored_after_ms: null, ...extra });
  const pausedCases = [
    [{ paused_queues: [] }, '–'],
    [{}, '–'],
    [{ paused_queues: [lossless({})], time_to_first_progress_ms: 3105 },
      'sw0/p1/lossless: paused 2\u00a0987 ms, 4\u00a0211 frames'],
    [{ paused_queues: [lossless({ watchdog_storms: 1, watchdog_dropped_frames: 37, watchdog_detected_after_ms: 201.2,
      watchdog_restored_after_ms: 203.4 }), lossless({ source: 'sw0/p2/lossless' })], time_to_first_progress_ms: 215.4 },
    'sw0/p1/lossless: paused 2\u00a0987 ms, 4\u00a0211 frames; watchdog +201 ms (job moved +215 ms), restored 203 ms ' +
      'after the fault, 37 dropped (+1 more queue)'],
    [{ paused_queues: [lossless({ watchdog_detected_after_ms: 199.6 })], time_to_first_progress_ms: null },
      'sw0/p1/lossless: paused 2\u00a0987 ms, 4\u00a0211 frames; watchdog +200 ms'],
  ];
  for (const [s, want] of pausedCases) assert.equal(cells.fmtPausedQueues(s), want, JSON.stringify(s));
  // IB steps' subnet figures, as ib_run_e2e_test's runs produced them.
  const subnet = (extra) => ({ time_to_new_master_ms: null, new_master: '', sa_outage_ms: 0, sa_restored: true,
    lid_changes: 0, time_to_routable_ms: null, routes_restored: true, unroutable_pairs: 0, lft_entries_changed: 0,
    lft_share_changed: 0, lft_entries_differ_after: 0, ...extra });
  const subnetCases = [
    [{}, '–'],
    [{ subnet: subnet({}) }, 'no change seen'],
    [{ subnet: subnet({ time_to_new_master_ms: 3600.2, new_master: '0x0000000000100005', sa_outage_ms: 3021.4,
      master_returned: true }) }, 'new master +3.6 s (…100005); SA out 3.0 s'],
    [{ subnet: subnet({ time_to_new_master_ms: 3600.2, new_master: '0x0000000000100005', master_returned: false }) },
      'new master +3.6 s (…100005), original master not back'],
    [{ subnet: subnet({ time_to_routable_ms: 14.27, unroutable_pairs: 4, lft_entries_changed: 20,
      lft_share_changed: 0.625, sa_outage_ms: 100.9 }) },
    'SA out 101 ms; routable again +14 ms (4 pairs broken); 20 LFT entries rewritten (63 %), 0 differ at the end'],
    [{ subnet: subnet({ routes_restored: false, unroutable_pairs: 1, sa_restored: false, sa_outage_ms: 60000,
      lid_changes: 1 }) }, 'SA still out after 60.0 s; 1 pair left unroutable; 1 LID move'],
  ];
  for (const [s, want] of subnetCases) assert.equal(cells.fmtSubnet(s), want, JSON.stringify(s));
  // A finished run's x axis: to the fault window and the workload's end even past the samples.
  const { finishedXEnd } = await import(join(sourceDir, 'web', 'src', 'x_extent.js'));
  const extentCases = [
    [{}, null],
    [{ windows: [{ start_s: 2.16, end_s: 3.66 }], markers: [] }, 3.66],
    [{ windows: [{ start_s: 0.1, end_s: 2.1 }, { start_s: 2.16, end_s: null }],
      markers: [{ t_s: 5.66, cls: 'ev-rank_done' }, { t_s: 9, cls: 'ev-state' }] }, 5.66],
  ];
  for (const [o, want] of extentCases) assert.equal(finishedXEnd(o), want, JSON.stringify(o));
  return `${rateCases.length} counter-rate cases, ${cellCases.length} p99 cell cases, ${pausedCases.length} PFC cell cases, ` +
    `${subnetCases.length} IB subnet cell cases, ${extentCases.length} x-extent cases, ` +
    `${classCases.length} source types, ` +
    `${goodputCases.length} goodput cases, ${troubleCases.length} trouble-counter names, ${counterCases.length} default ` +
    'RDMA counter cases, merge/align/default-queue checks';
}
console.log('# pure dashboard helpers (web/src/telemetry.js, host_telemetry.js, step_cells.js, x_extent.js) passed: ' +
  `${await checkPureHelpers()}`);

// --- prerequisites: skip outside CI, fail in CI --------------------------------------------------
function missingPrerequisites() {
  const missing = [];
  if (!binary || !existsSync(binary)) missing.push(`FC_BINARY (${binary || 'unset'}): build the fabric-chaos target`);
  if (typeof process.getuid === 'function' && process.getuid() !== 0) missing.push('root (the namespace lab needs it)');
  if (!existsSync(kChromium)) missing.push(`chromium at ${kChromium}: apt-get install chromium (deploy/install-deps.sh)`);
  if (!existsSync(kSqlite3)) missing.push(`the sqlite3 CLI at ${kSqlite3}: apt-get install sqlite3 (deploy/install-deps.sh)`);
  if (!existsSync(join(sourceDir, 'web', 'node_modules', 'playwright-core'))) {
    missing.push(`web/node_modules/playwright-core: run (cd ${join(sourceDir, 'web')} && npm ci && npm run build)`);
  }
  if (!existsSync(join(sourceDir, 'web', 'dist', 'index.html')) ||
      !existsSync(join(sourceDir, 'web', 'dist', 'vendor', 'uPlot.esm.js'))) {
    missing.push(`the built dashboard web/dist: run (cd ${join(sourceDir, 'web')} && npm ci && npm run build)`);
  }
  return missing;
}

const missing = missingPrerequisites();
if (missing.length && !inCi) {
  console.log(`SKIP browser tier: missing ${missing.join('; ')}`);
  process.exit(77);
}
if (missing.length) console.log(`FAIL browser tier (CI=true, nothing is skipped): missing ${missing.join('; ')}`);

// --- small helpers -------------------------------------------------------------------------------
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function freePort() {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolvePort(port));
    });
  });
}

function labNamespaces() {
  const out = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`ip netns list failed: ${out.stderr}`);
  return out.stdout.split('\n').map((l) => l.split(' ')[0]).filter((n) => n.startsWith('fcl-'));
}

// Other fabric-chaos processes (another test's lab shares the fcl-* names), excluding ours.
function otherFabricChaos(excludePid) {
  const found = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    if (Number(pid) === excludePid || Number(pid) === process.pid) continue;
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
      if (cmd.length > 1 && /fabric-chaos$/.test(cmd[0]) && /^(serve|lab)$/.test(cmd[1])) found.push(`${pid}: ${cmd.join(' ')}`);
    } catch { /* gone */ }
  }
  return found;
}

function hexToRgb(hex) {
  const n = parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

// --- state shared by the steps -------------------------------------------------------------------
const ctx = {
  tmp: null, port: 0, base: '', serve: null, serveExit: null, serveLog: '', adminToken: '',
  fabric: '', browser: null, page: null, consoleErrors: [], requests: [], loads: 0,
  runUi: 0, runApi: 0, runViewer: 0, viewerToken: '', operatorToken: '', leftFault: 0, runOwner: 0,
  shots: [], timings: [],
};

async function api(method, path, body, token = ctx.adminToken) {
  const headers = { Accept: 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(ctx.base + path.replace(/^\//, ''), {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const data = text ? JSON.parse(text) : null;
  if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${text}`);
  return data;
}

async function waitForRunFinal(id, timeoutMs = 90000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = await api('GET', `/v1/runs/${id}`);
    if (kFinal.has(run.state)) return run;
    if (Date.now() > deadline) throw new Error(`run ${id} still ${run.state} after ${timeoutMs} ms`);
    await sleep(300);
  }
}

function serveLogTail() {
  try {
    return readFileSync(ctx.serveLog, 'utf8').split('\n').slice(-25).join('\n');
  } catch {
    return '(no serve log)';
  }
}

async function startServe() {
  // Another test's lab uses the same fixed namespace names: wait for it to go away.
  const waitDeadline = Date.now() + 150000;
  while (labNamespaces().length) {
    if (Date.now() > waitDeadline) {
      throw new Error(`a namespace lab is already up (${labNamespaces().join(' ')}) and did not go away in 150 s; ` +
        `other fabric-chaos processes: ${otherFabricChaos(0).join('; ') || 'none'} (a leftover lab: fabric-chaos lab down)`);
    }
    await sleep(2000);
  }
  ctx.port = await freePort();
  ctx.base = `http://127.0.0.1:${ctx.port}/`;
  const tokenFile = join(ctx.tmp, 'admin.token');
  const fd = openSync(ctx.serveLog, 'a');
  const args = ['serve', '--listen', `127.0.0.1:${ctx.port}`, '--db', join(ctx.tmp, 'db'),
    '--state-dir', join(ctx.tmp, 'state'), '--with-lab', '2', '--admin-token-file', tokenFile,
    '--web-root', join(sourceDir, 'web', 'dist')];
  const child = spawn(binary, args, { stdio: ['ignore', fd, fd] });
  closeSync(fd);
  ctx.serve = child;
  ctx.serveExit = new Promise((r) => child.once('exit', (code, signal) => r({ code, signal })));
  let exited = null;
  ctx.serveExit.then((e) => { exited = e; });
  const deadline = Date.now() + 90000;
  for (;;) {
    if (exited) {
      throw new Error(`serve exited early (${JSON.stringify(exited)}); its log:\n${serveLogTail()}`);
    }
    if (existsSync(tokenFile)) {
      try {
        const res = await fetch(`${ctx.base}healthz`);
        if (res.ok) break;
      } catch { /* not listening yet */ }
    }
    if (Date.now() > deadline) throw new Error(`serve did not answer /healthz within 90 s; its log:\n${serveLogTail()}`);
    await sleep(200);
  }
  ctx.adminToken = readFileSync(tokenFile, 'utf8').trim();
  // The namespaces have fixed names: a lab that another test brought up in the meantime is reused
  // (same size) or replaced (another size) by `lab up`. Say so, to explain a failure that follows.
  const log = readFileSync(ctx.serveLog, 'utf8');
  if (/is already up|removing a partial or different lab/.test(log)) {
    console.log(`# note: serve found a lab already up (another test's?): ${otherFabricChaos(child.pid).join('; ') || 'no other process'}`);
  }
}

// After a failure: every run as the API has it (detail, events, samples), for the artefacts.
async function dumpRuns() {
  try {
    const { runs } = await api('GET', '/v1/runs?limit=50');
    for (const r of runs) {
      const [detail, events, samples] = await Promise.all([api('GET', `/v1/runs/${r.id}`),
        api('GET', `/v1/runs/${r.id}/events`), api('GET', `/v1/runs/${r.id}/samples`)]);
      writeFileSync(join(artifacts, `run-${r.id}.json`), JSON.stringify({ detail, events, samples }, null, 1));
    }
  } catch (e) {
    console.log(`# could not dump the runs: ${e.message}`);
  }
}

// Other serve/lab processes running while this test runs share the fixed fcl-* namespace names
// and can take the lab away under it: they are named in the report to tell such a failure apart.
function watchOtherLabs() {
  const seen = new Map();
  const timer = setInterval(() => {
    for (const p of otherFabricChaos(ctx.serve ? ctx.serve.pid : 0)) if (!seen.has(p)) seen.set(p, new Date().toISOString());
  }, 1000);
  timer.unref();
  return () => { clearInterval(timer); return [...seen].map(([p, t]) => `${t} ${p}`); };
}

async function stopServe() {
  if (!ctx.serve || ctx.serve.exitCode !== null || ctx.serve.signalCode !== null) return null;
  ctx.serve.kill('SIGTERM');
  let timer = null;
  const result = await Promise.race([ctx.serveExit,
    new Promise((r) => { timer = setTimeout(() => r(null), 30000); })]);
  clearTimeout(timer);
  if (result) return result;
  ctx.serve.kill('SIGKILL');
  await ctx.serveExit;
  spawnSync(binary, ['lab', 'down', '--state-dir', join(ctx.tmp, 'state')], { stdio: 'inherit' });
  return { code: null, signal: 'SIGKILL (serve ignored SIGTERM for 30 s; ran lab down)' };
}

// ctest SIGKILLs the whole tree at its TIMEOUT (300 s), which would leave the lab up and a fault
// possibly applied: stop serve (it removes the lab) before that, and on SIGTERM / SIGINT.
const kWatchdogMs = 270000;
async function emergencyStop(why) {
  console.log(`# ${why}: closing chromium and stopping serve (removes the lab)`);
  if (ctx.browser) await ctx.browser.close().catch(() => {});
  await stopServe().catch((e) => console.log(`# stopping serve failed: ${e.message}`));
  if (ctx.tmp) rmSync(ctx.tmp, { recursive: true, force: true });
  process.exit(1);
}
setTimeout(() => emergencyStop(`watchdog: the test ran longer than ${kWatchdogMs / 1000} s`), kWatchdogMs).unref();
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.once(signal, () => emergencyStop(`got ${signal}`));

// --- the fabric and the journal as seen from outside serve ---------------------------------------
function run(cmd, args) {
  const out = spawnSync(cmd, args, { encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: exit ${out.status}: ${out.stderr}`);
  return out.stdout;
}

// The kernel's word on a port: administratively up (IFF_UP), and its operstate.
function portState(ifname) {
  const [link] = JSON.parse(run('ip', ['-n', kSwitchNs, '-j', 'link', 'show', 'dev', ifname]));
  return { up: (link.flags || []).includes('UP'), operstate: link.operstate };
}

// serve's database, read and written by the sqlite3 CLI (WAL: fine while serve has it open).
function sqlite(sql) {
  return run(kSqlite3, ['-batch', '-cmd', '.timeout 10000', join(ctx.tmp, 'db'), sql]).trim();
}
const sqlText = (value) => `'${String(value).replace(/'/g, "''")}'`;

// Switch telemetry for a run, as the lab's sampler stores it (Store::appendTelemetry: one row per
// source, metric and 100 ms tick, counters cumulative), written into serve's database: the
// namespace lab of `serve --with-lab 2` has no modelled ports (no --link-rate), so it samples
// none. Three queues on sw0 from fromMs to toMs; inside [faultStart, faultEnd) h1's best-effort
// queue is the hot spot: its tx slows from 10 to 2 Mbit/s, it drops 800 packets a tick and its
// backlog stands at 127 KiB; h1's lossless queue marks 50 packets a tick. h0's lossless tx
// counter starts again from 0 half-way (the queue made again): a gap in its rate.
const kHotQueue = 'sw0/p1/best_effort';
function seedTelemetry(runId, fromMs, toMs, faultStart, faultEnd, counters = {}) {
  const rows = [];
  const sources = ['sw0/p0/lossless', kHotQueue, 'sw0/p1/lossless'];
  for (const src of sources) {
    for (const m of ['tx_bytes', 'tx_packets', 'drops', 'ecn_marked']) counters[`${src} ${m}`] ??= 0;
  }
  const resetAt = fromMs + Math.round((toMs - fromMs) / 200) * 100;
  for (let t = fromMs; t <= toMs; t += 100) {
    const inFault = t >= faultStart && t < faultEnd;
    for (const src of sources) {
      const c = (m) => `${src} ${m}`;
      const hot = src === kHotQueue && inFault;
      const txBytes = hot ? 25000 : src === 'sw0/p1/lossless' ? 60000 : 125000;
      if (src === 'sw0/p0/lossless' && t === resetAt) counters[c('tx_bytes')] = 0;
      counters[c('tx_bytes')] += txBytes;
      counters[c('tx_packets')] += Math.round(txBytes / 1500);
      if (hot) counters[c('drops')] += 800;
      if (src === 'sw0/p1/lossless' && inFault) counters[c('ecn_marked')] += 50;
      const backlog = hot ? 130048 : 2048;
      for (const [metric, value] of [['tx_bytes', counters[c('tx_bytes')]], ['tx_packets', counters[c('tx_packets')]],
        ['drops', counters[c('drops')]], ['ecn_marked', counters[c('ecn_marked')]], ['backlog_bytes', backlog]]) {
        rows.push(`(${runId}, ${t}, ${sqlText(src)}, ${sqlText(metric)}, ${value})`);
      }
    }
  }
  sqlite(`INSERT INTO telemetry (run_id, t_ms, source, metric, value) VALUES ${rows.join(', ')};`);
  return { rows: rows.length, sources, counters };
}

// A traffic fault's generators and an RDMA port, as the engine stores them beside the switch
// queues (same table; the API tells them apart by the source name, docs/api.md): an incast from
// h0 and h1 into h3, read every 1000 ms from fromMs to toMs (h0 sends 40 Mbit/s; h1 20 Mbit/s,
// 60 inside [faultStart, faultEnd); the sink receives both), and h3's Soft-RoCE port read every
// 100 ms, sending 800 packets a tick and counting 3 sequence errors a tick inside the window only.
const kTrafficSources = ['traffic/incast/h0', 'traffic/incast/h1', 'traffic/incast/h3/sink'];
const kRdmaPort = 'rdma/h3/rxe0/1';
function seedHostTelemetry(runId, fromMs, toMs, faultStart, faultEnd) {
  const rows = [];
  const row = (t, source, metric, value) => rows.push(`(${runId}, ${t}, ${sqlText(source)}, ${sqlText(metric)}, ${value})`);
  const sent = { h0: 0, h1: 0 };
  for (let t = fromMs; t <= toMs; t += 1000) {
    const inFault = t >= faultStart && t < faultEnd;
    if (t > fromMs) {
      sent.h0 += 5e6;
      sent.h1 += inFault ? 7.5e6 : 2.5e6;
    }
    row(t, kTrafficSources[0], 'sent_bytes', sent.h0);
    row(t, kTrafficSources[0], 'flows_connected', 4);
    row(t, kTrafficSources[1], 'sent_bytes', sent.h1);
    row(t, kTrafficSources[1], 'flows_connected', 4);
    row(t, kTrafficSources[2], 'received_bytes', sent.h0 + sent.h1);
  }
  const port = { sent_pkts: 0, rcvd_seq_err: 0 };
  for (let t = fromMs; t <= toMs; t += 100) {
    if (t > fromMs) {
      port.sent_pkts += 800;
      if (t >= faultStart && t < faultEnd) port.rcvd_seq_err += 3;
    }
    row(t, kRdmaPort, 'sent_pkts', port.sent_pkts);
    row(t, kRdmaPort, 'rcvd_seq_err', port.rcvd_seq_err);
  }
  sqlite(`INSERT INTO telemetry (run_id, t_ms, source, metric, value) VALUES ${rows.join(', ')};`);
  return { rows: rows.length, port };
}

// --- page helpers --------------------------------------------------------------------------------
const tid = (id) => `[data-testid="${id}"]`;

async function shot(name) {
  const path = join(artifacts, `${String(ctx.shots.length + 1).padStart(2, '0')}-${name}.png`);
  await ctx.page.screenshot({ path, fullPage: false });
  ctx.shots.push(path);
  return path;
}

// Layout at 1280x800: nothing wider than the viewport (no horizontal scrolling), then a screenshot.
async function checkPage(name) {
  const width = await ctx.page.evaluate(() => document.documentElement.scrollWidth);
  await shot(name);
  assert.ok(width <= kViewport.width, `${name}: page is ${width} px wide, wider than ${kViewport.width} (layout breakage)`);
}

// The console errors a step provokes on purpose: exactly `count`, each matching `pattern`; they
// are then removed from the list that must be empty at the end.
async function expectConsoleErrors(count, pattern, why) {
  const deadline = Date.now() + 5000;
  while (ctx.consoleErrors.length < count && Date.now() < deadline) await sleep(100);
  await sleep(300);
  const got = ctx.consoleErrors.splice(0);
  assert.equal(got.length, count, `${why}: expected ${count} console error(s) matching ${pattern}, got ${JSON.stringify(got)}`);
  for (const e of got) assert.match(e, pattern, `${why}: unexpected console error`);
}

// Pixels of a canvas close to each of `colors` (sum over the canvas; antialiasing tolerated).
async function canvasColorCounts(selector, colors) {
  return ctx.page.evaluate(({ selector, rgbs }) => {
    const canvas = document.querySelector(selector);
    if (!canvas) return null;
    const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
    const counts = rgbs.map(() => 0);
    let painted = 0;
    for (let i = 0; i < data.length; i += 4) {
      if (data[i + 3] < 128) continue;
      painted++;
      rgbs.forEach(([r, g, b], k) => {
        if (Math.abs(data[i] - r) + Math.abs(data[i + 1] - g) + Math.abs(data[i + 2] - b) < 60) counts[k]++;
      });
    }
    return { counts, painted, width: canvas.width, height: canvas.height };
  }, { selector, rgbs: colors.map(hexToRgb) });
}

async function login(token) {
  await ctx.page.goto(`${ctx.base}#/login`);
  await ctx.page.fill(tid('login-token'), token);
  await ctx.page.click(tid('login-submit'));
  await ctx.page.waitForSelector(tid('runs-page'));
  await ctx.page.waitForSelector(tid('role'));
}

// --- the steps -----------------------------------------------------------------------------------
let failedStep = '';
function step(name, fn, timeout = 120000) {
  it(name, { timeout }, async (t) => {
    if (failedStep) {
      t.skip(`an earlier step failed (${failedStep})`);
      return;
    }
    const started = Date.now();
    try {
      await fn();
    } catch (e) {
      failedStep = name;
      if (ctx.page) await shot(`FAILED-${name.replace(/[^a-z0-9]+/gi, '-')}`).catch(() => {});
      throw e;
    } finally {
      ctx.timings.push([name, Date.now() - started]);
    }
  });
}

describe('dashboard in chromium against serve --with-lab 2', { concurrency: 1 }, () => {
  before(async () => {
    if (missing.length) throw new Error(`browser tier prerequisites missing (CI=true, so this fails): ${missing.join('; ')}`);
    mkdirSync(artifacts, { recursive: true });
    for (const f of readdirSync(artifacts)) if (/\.(png|json)$/.test(f)) rmSync(join(artifacts, f));
    rmSync(join(artifacts, 'rank-logs'), { recursive: true, force: true });
    ctx.tmp = mkdtempSync(join(tmpdir(), 'fc-browser-'));
    ctx.serveLog = join(artifacts, 'serve.log');
    rmSync(ctx.serveLog, { force: true });
    console.log(`# before: ${process.uptime().toFixed(1)} s after node started`);
    const started = Date.now();
    await startServe();
    ctx.timings.push(['serve --with-lab 2 up', Date.now() - started]);
    ctx.stopWatching = watchOtherLabs();

    const launched = Date.now();
    const require = createRequire(join(sourceDir, 'web', 'package.json'));
    const { chromium } = require('playwright-core');
    // A persistent context is how playwright takes an explicit, fresh --user-data-dir.
    ctx.browser = await chromium.launchPersistentContext(join(ctx.tmp, 'chromium-profile'), {
      executablePath: kChromium,
      headless: true,
      viewport: kViewport,
      // Our own handlers stop serve first (see emergencyStop).
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
        '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
    });
    ctx.page = ctx.browser.pages()[0] || await ctx.browser.newPage();
    ctx.page.setDefaultTimeout(30000);
    ctx.page.on('console', (m) => { if (m.type() === 'error') ctx.consoleErrors.push(`console: ${m.text()}`); });
    ctx.page.on('pageerror', (e) => ctx.consoleErrors.push(`pageerror: ${e.message}`));
    ctx.page.on('request', (r) => ctx.requests.push(r.url()));
    ctx.page.on('load', () => { ctx.loads++; });
    ctx.timings.push(['chromium launched', Date.now() - launched]);
  }, { timeout: 200000 });

  after(async () => {
    const leftovers = [];
    const closing = Date.now();
    const others = ctx.stopWatching ? ctx.stopWatching() : [];
    if (failedStep && ctx.serve) await dumpRuns();
    if (ctx.browser) await ctx.browser.close().catch(() => {});
    ctx.timings.push(['chromium closed', Date.now() - closing]);
    const stopping = Date.now();
    const stopped = await stopServe();
    ctx.timings.push(['serve stopped (lab down)', Date.now() - stopping]);
    if (ctx.serve) {
      // --with-lab removes the lab on SIGTERM: no fcl-* namespace may be left.
      let left = labNamespaces();
      for (let i = 0; i < 20 && left.length; ++i) { await sleep(250); left = labNamespaces(); }
      if (left.length) {
        const running = otherFabricChaos(ctx.serve.pid);
        if (running.length) {
          console.log(`# note: fcl-* namespaces present after serve stopped, but other fabric-chaos ` +
            `processes run: ${running.join('; ')}`);
        }
        else leftovers.push(`namespaces left after serve stopped: ${left.join(' ')}`);
      }
      console.log(`# serve stopped: ${JSON.stringify(stopped)}; log: ${ctx.serveLog}`);
    }
    if (failedStep && ctx.tmp && existsSync(join(ctx.tmp, 'state', 'logs'))) {
      cpSync(join(ctx.tmp, 'state', 'logs'), join(artifacts, 'rank-logs'), { recursive: true });
    }
    if (ctx.tmp) rmSync(ctx.tmp, { recursive: true, force: true });
    console.log('# summary (step, ms):');
    for (const [name, ms] of ctx.timings) console.log(`#   ${String(ms).padStart(6)}  ${name}`);
    console.log(`# screenshots (${ctx.shots.length}) in ${artifacts}; ${process.uptime().toFixed(1)} s since node started`);
    if (others.length) {
      console.log(`# other fabric-chaos serve/lab processes ran during this test (they share the fcl-* lab): ${others.join('; ')}`);
    }
    if (ctx.consoleErrors.length) leftovers.push(`unexpected console/page errors: ${JSON.stringify(ctx.consoleErrors)}`);
    assert.deepEqual(leftovers, [], leftovers.join('; '));
  }, { timeout: 60000 });

  step('set-up: fabric registered and the short scenario stored through the API', async () => {
    const fabrics = await api('GET', '/v1/fabrics');
    assert.ok(fabrics.fabrics.length >= 1, `no fabric registered by --with-lab: ${JSON.stringify(fabrics)}`);
    ctx.fabric = fabrics.fabrics[0].name;
    const saved = await api('PUT', `/v1/scenarios/${kScenario}`, kScenarioDoc);
    assert.ok(saved, 'PUT scenario returned no body');
    const back = await api('GET', `/v1/scenarios/${kScenario}`);
    assert.equal(back.baseline_ms, 2000);
  });

  step('login: a bad token is rejected with a message, the admin token logs in', async () => {
    const { page } = ctx;
    await page.goto(ctx.base);
    await page.waitForSelector(tid('login-form'));
    assert.equal(ctx.consoleErrors.length, 0, `a visit without a token logged errors: ${ctx.consoleErrors}`);
    await checkPage('login');
    await page.fill(tid('login-token'), 'fct_not_a_real_token');
    await page.click(tid('login-submit'));
    await page.waitForFunction((sel) => document.querySelector(sel)?.textContent.includes('rejected'), tid('login-message'));
    await expectConsoleErrors(1, /status of 401/, 'bad token');
    await shot('login-rejected');
    await login(ctx.adminToken);
    assert.equal((await page.textContent(tid('role'))).trim(), 'admin');
    await checkPage('runs-empty');
  });

  step('fabrics page: the star lab listed, its switch, hosts and links drawn and tabled', async () => {
    const { page } = ctx;
    // What `serve --with-lab 2` registers (docs/lab.md, "star"), as the API has it.
    const fabric = await api('GET', `/v1/fabrics/${ctx.fabric}`);
    assert.equal(fabric.name, 'netns-lab');
    assert.deepEqual(fabric.switches.map((s) => s.name), ['sw0']);
    assert.deepEqual(fabric.hosts.map((h) => h.name), ['h0', 'h1']);
    assert.deepEqual(fabric.links.map((l) => l.id), ['h0-sw0', 'h1-sw0']);

    await page.click('nav a[data-nav="fabrics"]');
    const row = page.locator(`${tid('fabric-row')}[data-name="${ctx.fabric}"]`);
    await row.waitFor();
    assert.equal(await page.locator(tid('fabric-row')).count(), 1);
    const cell = async (id) => (await row.locator(tid(id)).textContent()).trim();
    assert.deepEqual([await cell('fabric-row-kind'), await cell('fabric-row-shape'), await cell('fabric-row-hosts'),
      await cell('fabric-row-switches'), await cell('fabric-row-links'), await cell('fabric-row-switch-links')],
    [fabric.kind, 'star', '2', '1', '2', '0']);
    assert.ok(await page.locator('nav a[data-nav="fabrics"].active').count(), 'the nav does not mark Fabrics active');
    await checkPage('fabrics');

    await row.locator(tid('fabric-link')).click();
    await page.waitForSelector(tid('topology-svg'));
    assert.match(page.url(), /#\/fabrics\/netns-lab$/);
    assert.equal((await page.textContent(tid('fabric-shape'))).trim(), 'star');

    // The drawing: sw0 in the upper row, h0 and h1 below it, one line per link from the switch's
    // bottom edge to the host's top edge; tooltips with netns and ports.
    const drawn = await page.evaluate(() => {
      const box = (n) => { const r = n.getBoundingClientRect(); return { left: r.left, right: r.right, top: r.top, bottom: r.bottom }; };
      const nodes = [...document.querySelectorAll('[data-testid="topology-node"]')].map((n) => ({
        name: n.dataset.name, kind: n.dataset.nodeKind, text: n.textContent, title: n.querySelector('title').textContent,
        box: box(n.querySelector('rect')),
      }));
      const links = [...document.querySelectorAll('[data-testid="topology-link"]')].map((g) => {
        const line = g.querySelector('.topo-line');
        const m = line.getScreenCTM();
        const at = (x, y) => ({ x: m.a * x + m.c * y + m.e, y: m.b * x + m.d * y + m.f });
        return { id: g.dataset.linkId, kind: g.dataset.linkKind, title: g.querySelector('title').textContent,
          from: at(line.x1.baseVal.value, line.y1.baseVal.value), to: at(line.x2.baseVal.value, line.y2.baseVal.value) };
      });
      return { nodes, links };
    });
    const node = (name) => drawn.nodes.find((n) => n.name === name);
    assert.deepEqual(drawn.nodes.map((n) => `${n.kind}:${n.name}`).sort(), ['host:h0', 'host:h1', 'switch:sw0']);
    for (const n of drawn.nodes) assert.ok(n.text.includes(n.name), `node ${n.name} is not labelled: ${n.text}`);
    assert.match(node('sw0').title, /netns fcl-sw0/);
    assert.match(node('sw0').title, /ports p0 p1/);
    assert.match(node('h0').title, /netns fcl-h0/);
    for (const h of ['h0', 'h1']) assert.ok(node(h).box.top > node('sw0').box.bottom + 20, `${h} is not below sw0`);
    assert.ok(node('h0').box.right < node('h1').box.left, 'h0 and h1 overlap');
    assert.deepEqual(drawn.links.map((l) => l.id).sort(), ['h0-sw0', 'h1-sw0']);
    for (const l of drawn.links) {
      const [sw, host] = [node('sw0').box, node(l.id.split('-')[0]).box];
      assert.equal(l.kind, 'host');
      assert.ok(Math.abs(l.from.y - sw.bottom) < 3 && l.from.x > sw.left && l.from.x < sw.right,
        `link ${l.id} does not start at sw0's bottom edge: ${JSON.stringify(l.from)} vs ${JSON.stringify(sw)}`);
      assert.ok(Math.abs(l.to.y - host.top) < 3 && l.to.x > host.left && l.to.x < host.right,
        `link ${l.id} does not end at its host's top edge: ${JSON.stringify(l.to)} vs ${JSON.stringify(host)}`);
      assert.match(l.title, new RegExp(`select \\{"link": "${l.id}"\\}`));
    }

    // The tables, against the API's description.
    assert.equal(await page.locator(tid('switch-row')).count(), 1);
    const swRow = page.locator(`${tid('switch-row')}[data-name="sw0"]`);
    assert.match(await swRow.textContent(), /fcl-sw0/);
    assert.equal((await swRow.locator(tid('switch-ports')).textContent()).trim(), fabric.switches[0].ports.join(' '));
    assert.equal(await page.locator(tid('host-row')).count(), 2);
    for (const h of fabric.hosts) {
      const hostRow = page.locator(`${tid('host-row')}[data-name="${h.name}"]`);
      const nics = await hostRow.locator(tid('host-nics')).textContent();
      for (const nic of h.nics) assert.ok(nics.includes(`${nic.name} ${nic.address}`), `${h.name} NICs: ${nics}`);
      assert.equal((await hostRow.locator(tid('host-agent-state')).textContent()).trim(),
        h.agent.reachable ? 'reachable' : 'unreachable', `${h.name}'s agent: ${JSON.stringify(h.agent)}`);
    }
    assert.equal(await page.locator(tid('link-row')).count(), 2);
    for (const l of fabric.links) {
      const linkRow = page.locator(`${tid('link-row')}[data-link-id="${l.id}"]`);
      assert.match(await linkRow.textContent(), new RegExp(`${l.host} ${l.nic}.*${l.switch} ${l.port}`));
      assert.equal((await linkRow.locator(tid('link-selector')).textContent()).trim(), `{"link": "${l.id}"}`);
    }
    assert.equal(await page.locator(tid('switch-links-table')).count(), 0, 'a star fabric has no switch links table');

    // A click on h1's line selects that link: line and row highlighted, its selectors shown.
    const hit = await page.locator(`${tid('topology-link')}[data-link-id="h1-sw0"] .topo-hit`).boundingBox();
    await page.mouse.click(hit.x + hit.width / 2, hit.y + hit.height / 2);
    await page.waitForSelector(`${tid('link-selection')}[data-link-id="h1-sw0"]`);
    assert.deepEqual((await page.locator(tid('selection-selector')).allTextContents()).map((t) => t.trim()),
      ['{"link": "h1-sw0"}', '{"link": "h1-sw0", "side": "host"}']);
    assert.ok(await page.locator(`${tid('topology-link')}[data-link-id="h1-sw0"].selected`).count(), 'the line is not highlighted');
    assert.ok(await page.locator(`${tid('link-row')}[data-link-id="h1-sw0"].selected`).count(), 'the row is not highlighted');
    await checkPage('fabric-star');
    await page.screenshot({ path: join(artifacts, 'fabric-star-full.png'), fullPage: true });
  });

  step('scenario library: the editor shows validation errors inline', async () => {
    const { page } = ctx;
    await page.click('nav a[data-nav="scenarios"]');
    await page.waitForSelector(`${tid('scenario-row')}[data-name="${kScenario}"]`);
    assert.ok(await page.locator(tid('new-scenario')).isVisible(), 'an admin sees the new-scenario button');
    await checkPage('scenarios');
    await page.click(`${tid('scenario-row')}[data-name="${kScenario}"] ${tid('scenario-link')}`);
    await page.waitForSelector(tid('validation-ok'));
    // Beside the editor, every kind with its parameters as the server declares them: the table
    // shows what GET /v1/capabilities says, read here independently.
    const capabilities = await api('GET', '/v1/capabilities');
    const declared = capabilities.fault_kinds.find((k) => k.kind === 'link_flap').schema.params;
    const downMs = declared.find((p) => p.name === 'down_ms');
    const row = `${tid('kind-reference-kind')}[data-kind="link_flap"] ${tid('kind-param')}[data-param="down_ms"]`;
    await page.click(`${tid('kind-reference-kind')}[data-kind="link_flap"] summary`);
    await page.waitForSelector(row);
    assert.equal((await page.textContent(`${row} ${tid('kind-param-range')}`)).trim(), `${downMs.min}..${downMs.max}`);
    assert.equal(await page.locator(`${tid('kind-reference-kind')}[data-kind="link_flap"] ${tid('kind-param')}`).count(),
      declared.length, 'one row per declared parameter');
    assert.equal(await page.locator(tid('kind-reference-kind')).count(), capabilities.fault_kinds.length);
    const editor = page.locator(tid('scenario-editor'));
    await editor.fill((await editor.inputValue()).replace('"link_flap"', '"meteor"'));
    await page.waitForSelector(tid('validation-error'));
    const message = await page.textContent(tid('validation-error'));
    assert.match(message, /meteor/, `the inline error names the bad kind: ${message}`);
    await expectConsoleErrors(1, /status of 400/, 'invalid scenario in the editor');
    await checkPage('scenario-invalid');
    // Valid again, so that choosing the fabric next (which re-validates) provokes no 400.
    await editor.fill(JSON.stringify(kScenarioDoc, null, 2));
    await page.waitForSelector(tid('validation-ok'));
  });

  step('start a run from the UI and watch it live (EventSource, no reload)', async () => {
    const { page } = ctx;
    // The editor change above is not saved; the page still starts the stored scenario.
    await page.selectOption(tid('fabric-select'), ctx.fabric);
    // Record every state the run header shows, and what was drawn at that moment, from inside
    // the page: the recorder (and window.__fcMarker) would vanish with a reload.
    await page.evaluate(() => {
      window.__fcMarker = 'no-reload';
      window.__fcSnapshots = [];
      const snap = () => {
        const state = document.querySelector('[data-testid="run-state"]')?.textContent ?? null;
        if (!state) return;
        const abort = document.querySelector('[data-testid="abort-button"]');
        const s = {
          state,
          canvas: !!document.querySelector('[data-testid="busbw-plot"] canvas'),
          faultWindows: document.querySelectorAll('[data-testid="fault-window"]').length,
          abortVisible: !!abort && !abort.hidden,
          live: document.querySelector('[data-testid="run-live"]')?.textContent ?? '',
        };
        const last = window.__fcSnapshots.at(-1);
        if (!last || last.state !== s.state || last.canvas !== s.canvas || last.faultWindows !== s.faultWindows ||
            last.abortVisible !== s.abortVisible || (last.live !== s.live && window.__fcSnapshots.length < 3000)) {
          window.__fcSnapshots.push({ ...s, t: Date.now() });
        }
      };
      new MutationObserver(snap).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
    });
    const loadsBefore = ctx.loads;
    const startClicked = Date.now();
    await page.click(tid('start-run-button'));
    await page.waitForURL(/#\/runs\/\d+$/);
    ctx.runUi = Number(page.url().match(/#\/runs\/(\d+)$/)[1]);
    // The second run for the compare view, queued behind the first (same switch port).
    ctx.runApi = (await api('POST', '/v1/runs', { scenario: kScenario, fabric: ctx.fabric })).id;

    // While the link is down (no iteration completes): the plot is drawn up to the run's clock
    // and the active fault window is shaded.
    await page.waitForFunction(() => {
      const state = document.querySelector('[data-testid="run-state"]')?.textContent;
      return state === 'injecting' &&
        document.querySelector('[data-testid="busbw-plot"] canvas') &&
        document.querySelector('[data-testid="fault-window"]');
    }, null, { timeout: 60000, polling: 100 });
    await checkPage('run-live-fault');

    await page.waitForFunction(() => ['passed', 'failed', 'aborted', 'interrupted', 'error']
      .includes(document.querySelector('[data-testid="run-state"]')?.textContent), null, { timeout: 90000, polling: 200 });
    const finishedAfter = Date.now() - startClicked;
    // The final reload of the run (scores, steps) happens after the stream's end event.
    await page.waitForFunction(() => document.querySelector('[data-testid="steps-table"]') &&
      document.querySelector('[data-testid="run-score"]')?.textContent !== '–', null, { timeout: 15000 });

    const snapshots = await page.evaluate(() => window.__fcSnapshots);
    assert.equal(await page.evaluate(() => window.__fcMarker), 'no-reload', 'the page was reloaded during the run');
    assert.equal(ctx.loads, loadsBefore, 'a load event fired during the run (page reloaded)');
    const states = [...new Set(snapshots.map((s) => s.state))];
    const inProgress = states.filter((s) => kInProgress.has(s));
    console.log(`# run ${ctx.runUi}: states seen in the page ${states.join(' → ')}; final after ` +
      `${finishedAfter} ms; ${snapshots.length} snapshots`);
    assert.ok(inProgress.length >= 2, `fewer than two in-progress states shown live: ${states.join(', ')}`);
    assert.ok(inProgress.includes('baseline') || inProgress.includes('injecting') || inProgress.includes('recovering'),
      `no engine state shown live: ${states.join(', ')}`);
    const liveDrawn = snapshots.filter((s) => kInProgress.has(s.state) && s.canvas);
    assert.ok(liveDrawn.length > 0, 'the plot was never drawn while the run was in progress');
    assert.ok(snapshots.some((s) => s.state === 'injecting' && s.faultWindows > 0), 'no fault window shaded while the fault was in force');
    assert.ok(snapshots.some((s) => kInProgress.has(s.state) && s.abortVisible),
      'an admin saw no abort button while the run was in progress');
    assert.ok(snapshots.some((s) => /busbw \d/.test(s.live)), `the live line never showed a busbw: ${JSON.stringify(snapshots.slice(-3))}`);
    const liveLines = new Set(snapshots.filter((s) => s.live).map((s) => s.live));
    assert.ok(liveLines.size >= 3, `the live line changed only ${liveLines.size} time(s)`);
    // Live through the event stream, not the polling fallback.
    assert.ok(ctx.requests.some((u) => u.includes(`/v1/runs/${ctx.runUi}/stream`)), 'the page never opened /stream');
    const polls = ctx.requests.filter((u) => u.includes(`/v1/runs/${ctx.runUi}/samples?after_ms`));
    assert.equal(polls.length, 0, `the page fell back to polling: ${polls.slice(0, 3)}`);
    assert.ok(!(await page.locator(tid('abort-button')).isVisible()), 'the abort button is still shown for a finished run');
  }, 150000);

  step('finished run: plot drawn, fault window shaded and labelled, score and gate verdict', async () => {
    const { page } = ctx;
    const run = await api('GET', `/v1/runs/${ctx.runUi}`);
    const samples = (await api('GET', `/v1/runs/${ctx.runUi}/samples`)).samples;
    assert.ok(kFinal.has(run.state) && run.state !== 'error', `run ${ctx.runUi} ended ${run.state}: ${run.error}`);
    assert.ok(samples.length > 50, `only ${samples.length} samples`);
    assert.equal((await page.textContent(tid('run-state'))).trim(), run.state);

    // Score and verdict as stored.
    assert.equal(typeof run.score, 'number', `run has no score: ${JSON.stringify(run)}`);
    assert.equal((await page.textContent(tid('run-score'))).trim(), run.score.toFixed(1));
    const verdict = (await page.textContent(tid('run-verdict'))).trim();
    assert.equal(verdict, run.passed ? 'gates passed' : 'gates failed');
    const gates = run.result.gates || [];
    assert.ok(gates.length >= 1, 'the stored run has no gates');
    assert.equal(await page.locator(tid('gate')).count(), gates.length);
    assert.equal(await page.locator(tid('step-row')).count(), 1);

    // The plot: one legend entry per rank, and lines in the rank colours on the canvas.
    const ranks = [...new Set(samples.map((s) => s.rank))].sort();
    const legend = await page.locator(`${tid('busbw-plot')} .u-legend .u-series`).allTextContents();
    assert.equal(legend.length, ranks.length + 1, `legend: ${JSON.stringify(legend)}`);
    for (const r of ranks) assert.ok(legend.some((l) => l.includes(`rank ${r}`)), `no legend entry for rank ${r}: ${legend}`);
    const pixels = await canvasColorCounts(`${tid('busbw-plot')} canvas`, kRankColors.slice(0, ranks.length));
    const linePixels = pixels.counts.reduce((a, b) => a + b, 0);
    console.log(`# plot canvas ${pixels.width}x${pixels.height}: ${pixels.painted} painted px, ` +
      `rank-coloured ${JSON.stringify(pixels.counts)}`);
    assert.ok(linePixels > 300, `the plot canvas has only ${linePixels} pixels in the rank colours`);

    // The fault window: one per stored window, labelled with the step's kind, visibly shaded,
    // and where the stored window is on the x axis (uPlot's x range is the samples' extent).
    const windows = run.result.fault_windows;
    assert.equal(windows.length, 1, `stored fault windows: ${JSON.stringify(windows)}`);
    const shaded = page.locator(tid('fault-window'));
    assert.equal(await shaded.count(), 1);
    assert.match(await shaded.textContent(), /step 0: link_flap/);
    const bg = await shaded.evaluate((n) => getComputedStyle(n).backgroundColor);
    assert.doesNotMatch(bg, /rgba\(0, 0, 0, 0\)|transparent/, `fault window not shaded: ${bg}`);
    const box = await shaded.boundingBox();
    const over = await page.locator(`${tid('busbw-plot')} .u-over`).boundingBox();
    const xs = samples.flatMap((s) => [s.start_ms, s.start_ms + Math.max(0, s.duration_ms)]);
    const [xmin, xmax] = [Math.min(...xs), Math.max(...xs)];
    const expectLeft = over.x + ((windows[0].start_ms - xmin) / (xmax - xmin)) * over.width;
    const expectWidth = ((windows[0].end_ms - windows[0].start_ms) / (xmax - xmin)) * over.width;
    console.log(`# fault window ${windows[0].start_ms}-${windows[0].end_ms} ms: drawn at x ${box.x.toFixed(0)} ` +
      `w ${box.width.toFixed(0)}, expected x ${expectLeft.toFixed(0)} w ${expectWidth.toFixed(0)}`);
    assert.ok(Math.abs(box.x - expectLeft) < 0.03 * over.width, 'fault window drawn at the wrong place');
    assert.ok(Math.abs(box.width - expectWidth) < 0.03 * over.width + 3, 'fault window drawn with the wrong width');
    assert.equal(await page.locator(tid('baseline-window')).count(), 1, 'the baseline is not shaded');
    await checkPage('run-finished');
    await page.screenshot({ path: join(artifacts, 'run-finished-full.png'), fullPage: true });
  });

  step('switch telemetry: none on the star lab, then seeded telemetry plotted under busbw; p99 and hottest queue in the table', async () => {
    const { page } = ctx;
    // The namespace lab models no ports: the finished run has no telemetry and the panel says why.
    assert.deepEqual((await api('GET', `/v1/runs/${ctx.runUi}/telemetry`)).series, []);
    const noTelemetry = "no switch telemetry (the fabric's ports are not modelled: lab up --link-rate ...)";
    await page.waitForFunction(([sel, text]) => document.querySelector(sel)?.textContent.trim() === text,
      [tid('telemetry-empty'), noTelemetry], { timeout: 10000 });
    assert.equal(await page.locator(`${tid('telemetry')} canvas`).count(), 0);
    // Nor traffic generators (a link_flap is no traffic fault) or RDMA ports (the lab's hosts are
    // namespaces): the second panel says so, and why.
    await page.waitForFunction(([sel, text]) => document.querySelector(sel)?.textContent.trim() === text,
      [tid('host-telemetry-empty'), kNoHostTelemetry], { timeout: 10000 });
    assert.equal(await page.locator(`${tid('host-telemetry')} canvas`).count(), 0);
    const telemetryReads = ctx.requests.filter((u) => u.includes(`/v1/runs/${ctx.runUi}/telemetry`));
    assert.ok(telemetryReads.length >= 2, `the live page did not follow the telemetry: ${JSON.stringify(telemetryReads)}`);

    // The table's p99 column, from the analysis as stored (no telemetry needed for it).
    const run = await api('GET', `/v1/runs/${ctx.runUi}`);
    const [st] = run.result.analysis.steps;
    const iter = (t) => (t.iterations > 0 ? (t.p99 < 100 ? t.p99.toFixed(1) : String(Math.round(t.p99))) : '–');
    const p99Want = `${iter(st.baseline_iteration_ms)} → ${iter(st.fault_iteration_ms)} ms` +
      (st.p99_slowdown === null ? '' : ` ×${st.p99_slowdown.toFixed(1)}`);
    console.log(`# step 0 iteration times: ${JSON.stringify([st.baseline_iteration_ms, st.fault_iteration_ms, st.p99_slowdown])}`);
    assert.equal((await page.textContent(tid('step-p99'))).trim(), p99Want);
    assert.equal(st.hottest_queue, null, 'a hottest queue on a fabric without telemetry');
    assert.equal((await page.textContent(tid('step-hottest-queue'))).trim(), '–');
    assert.deepEqual(st.paused_queues, [], 'paused queues on a fabric without PFC');
    assert.equal((await page.textContent(tid('step-paused-queues'))).trim(), '–');
    assert.equal((await page.textContent(tid('step-subnet'))).trim(), '–', 'subnet figures on an Ethernet run');
    const headers = await page.locator(`${tid('steps-table')} th`).allTextContents();
    assert.ok(headers.includes('p99 iteration (base → fault)') && headers.includes('hottest queue') &&
      headers.includes('paused (PFC)') && headers.includes('subnet (IB)'), `headers: ${headers}`);

    // Seed telemetry as a modelled fabric's sampler would have stored it, and the analysis's
    // hottest queue as attachCongestion would have found it (its drops: 800 a tick in the fault).
    const [w] = run.result.fault_windows;
    const from = Math.round(run.result.baseline.start_ms / 100) * 100;
    const to = Math.round((w.end_ms + 1500) / 100) * 100;
    const faultStart = Math.ceil(w.start_ms / 100) * 100;
    const faultEnd = Math.ceil(w.end_ms / 100) * 100;
    const seeded = seedTelemetry(ctx.runUi, from, to, faultStart, faultEnd);
    const hottest = { source: kHotQueue, tx_bytes: 25000 * ((faultEnd - faultStart) / 100), drops: 12522, ecn_marked: 0,
      peak_backlog_bytes: 130048 };
    sqlite(`UPDATE runs SET result = json_set(result, '$.analysis.steps[0].hottest_queue', json(${sqlText(JSON.stringify(hottest))})) ` +
      `WHERE id = ${ctx.runUi}`);
    // And a PFC storm's paused queue, as attachObservations would have found it with a watchdog.
    const pausedQueue = { source: 'sw0/p1/lossless', paused_ms: 1203.5, pause_frames: 96, watchdog_storms: 1,
      watchdog_dropped_frames: 0, watchdog_detected_after_ms: 200.8, watchdog_restored_after_ms: 201.9 };
    sqlite(`UPDATE runs SET result = json_set(result, '$.analysis.steps[0].paused_queues', json(${sqlText(JSON.stringify([pausedQueue]))}), ` +
      `'$.analysis.steps[0].time_to_first_progress_ms', 212.3) WHERE id = ${ctx.runUi}`);
    const telemetry = await api('GET', `/v1/runs/${ctx.runUi}/telemetry`);
    assert.equal(telemetry.series.length, 3 * 5, 'three queues, five metrics');
    console.log(`# seeded ${seeded.rows} telemetry rows for run ${ctx.runUi}, ${from}-${to} ms, hot ${faultStart}-${faultEnd} ms`);

    await page.reload();
    await page.waitForSelector(`${tid('telemetry-rate-plot')} canvas`);
    await page.waitForSelector(`${tid('telemetry-backlog-plot')} canvas`);
    await page.waitForSelector(`${tid('telemetry-loss-plot')} canvas`);
    assert.equal(await page.locator(tid('telemetry-empty')).count(), 0);
    assert.equal((await page.textContent(tid('host-telemetry-empty'))).trim(), kNoHostTelemetry,
      'switch telemetry only: the traffic and RDMA panel still has none');
    assert.equal(await page.locator(`${tid('host-telemetry')} canvas`).count(), 0);
    assert.equal((await page.textContent(tid('step-hottest-queue'))).trim(),
      'sw0/p1/best_effort: 12\u00a0522 drops, 0 marks, peak 127 KiB');
    assert.equal((await page.textContent(tid('step-paused-queues'))).trim(),
      'sw0/p1/lossless: paused 1\u00a0204 ms, 96 frames; watchdog +201 ms (job moved +212 ms), restored 202 ms after the fault');
    // Every queue listed, the hottest ticked by default.
    const queues = page.locator(tid('telemetry-queue'));
    assert.deepEqual(await queues.evaluateAll((ls) => ls.map((l) => l.dataset.source)), seeded.sources);
    const ticked = await page.locator(`${tid('telemetry-queue')}:has(input:checked)`).evaluateAll((ls) => ls.map((l) => l.dataset.source));
    assert.deepEqual(ticked, [kHotQueue]);
    assert.match(await page.textContent(`${tid('telemetry-queue')}[data-source="${kHotQueue}"]`), /hottest/);
    const legend = async (box) => page.locator(`${tid(box)} .u-legend .u-series`).allTextContents();
    const rateLegend = await legend('telemetry-rate-plot');
    assert.ok(rateLegend.some((l) => l.includes(`${kHotQueue} tx`)), `tx legend: ${JSON.stringify(rateLegend)}`);
    const backlogLegend = await legend('telemetry-backlog-plot');
    assert.ok(backlogLegend.some((l) => l.includes(`${kHotQueue} backlog`)), `backlog legend: ${JSON.stringify(backlogLegend)}`);
    const lossLegend = await legend('telemetry-loss-plot');
    assert.ok(lossLegend.some((l) => l.includes(`${kHotQueue} drops`)) && lossLegend.some((l) => l.includes(`${kHotQueue} ECN marks`)),
      `loss legend: ${JSON.stringify(lossLegend)}`);
    // The hot queue's colour (web/src/views/run_telemetry.js: palette index 4 + its place among
    // the sources) is drawn on every canvas.
    const hotColor = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f'][(4 + 1) % 8];
    for (const box of ['telemetry-rate-plot', 'telemetry-backlog-plot', 'telemetry-loss-plot']) {
      const pixels = await canvasColorCounts(`${tid(box)} canvas`, [hotColor]);
      console.log(`# ${box}: ${pixels.counts[0]} px in the hot queue's colour`);
      assert.ok(pixels.counts[0] > 100, `${box}: the hot queue is barely drawn (${pixels.counts[0]} px)`);
    }
    // The same x axis and the same shading as the busbw plot: the fault window at the same place.
    const busbwWindow = await page.locator(`${tid('busbw-plot')} ${tid('fault-window')}`).boundingBox();
    for (const box of ['telemetry-rate-plot', 'telemetry-backlog-plot', 'telemetry-loss-plot']) {
      const shaded = page.locator(`${tid(box)} ${tid('telemetry-fault-window')}`);
      assert.equal(await shaded.count(), 1, `${box}: fault windows`);
      assert.match(await shaded.textContent(), /step 0: link_flap/);
      const b = await shaded.boundingBox();
      console.log(`# ${box} fault window x ${b.x.toFixed(0)} w ${b.width.toFixed(0)}; busbw's x ${busbwWindow.x.toFixed(0)} w ${busbwWindow.width.toFixed(0)}`);
      assert.ok(Math.abs(b.x - busbwWindow.x) < 3 && Math.abs(b.width - busbwWindow.width) < 3,
        `${box}: the fault window is not where the busbw plot has it (x axes differ)`);
      assert.equal(await page.locator(`${tid(box)} ${tid('telemetry-baseline-window')}`).count(), 1);
    }
    assert.equal(await page.locator(tid('fault-window')).count(), 1, 'the busbw plot\'s own windows are still one');
    await page.locator(tid('telemetry')).scrollIntoViewIfNeeded();
    await checkPage('run-telemetry');

    // Ticking another queue adds its lines.
    await page.locator(`${tid('telemetry-queue')}[data-source="sw0/p1/lossless"] input`).check();
    await page.waitForFunction((sel) => [...document.querySelectorAll(sel)].some((n) => n.textContent.includes('sw0/p1/lossless ECN marks')),
      `${tid('telemetry-loss-plot')} .u-legend .u-series`);
    assert.equal((await legend('telemetry-rate-plot')).length, 1 + 2, 'two queues\' tx, plus x');
    assert.equal((await legend('telemetry-loss-plot')).length, 1 + 2 * 2, 'two queues\' drops and marks, plus x');
    await page.screenshot({ path: join(artifacts, 'run-telemetry-full.png'), fullPage: true });
  });

  step('traffic and RDMA counters: seeded generators and an RDMA port in their own panel, the switch panel unchanged', async () => {
    const { page } = ctx;
    const run = await api('GET', `/v1/runs/${ctx.runUi}`);
    const [w] = run.result.fault_windows;
    const from = Math.round(run.result.baseline.start_ms / 1000) * 1000;
    const to = Math.round((w.end_ms + 1500) / 100) * 100;
    const faultStart = Math.ceil(w.start_ms / 100) * 100;
    const faultEnd = Math.ceil(w.end_ms / 100) * 100;
    const seeded = seedHostTelemetry(ctx.runUi, from, to, faultStart, faultEnd);
    console.log(`# seeded ${seeded.rows} traffic and RDMA rows for run ${ctx.runUi}, ${from}-${to} ms, ` +
      `${seeded.port.rcvd_seq_err} sequence errors in ${faultStart}-${faultEnd} ms`);
    assert.ok(seeded.port.rcvd_seq_err > 0, 'the fault window holds no 100 ms tick');
    // The API names each series' type (and its parts) from the source name.
    const { series } = await api('GET', `/v1/runs/${ctx.runUi}/telemetry`);
    const types = {};
    for (const s of series) types[s.type] = (types[s.type] || 0) + 1;
    assert.deepEqual(types, { switch_queue: 3 * 5, traffic: 2 * 2 + 1, rdma_port: 2 }, 'series per type');
    const sink = series.find((s) => s.source === kTrafficSources[2]);
    assert.deepEqual([sink.role, sink.host, sink.fault_kind, sink.metric], ['sink', 'h3', 'incast', 'received_bytes']);
    const port = series.find((s) => s.source === kRdmaPort);
    assert.deepEqual([port.host, port.device, port.port, port.kind], ['h3', 'rxe0', 1, 'counter']);

    // A finished run's page reads its telemetry once, for both panels.
    const readsBefore = ctx.requests.length;
    await page.reload();
    await page.waitForSelector(`${tid('host-telemetry-traffic-plot')} canvas`);
    await page.waitForSelector(`${tid('host-telemetry-rdma-plot')} canvas`);
    await page.waitForSelector(`${tid('telemetry-rate-plot')} canvas`);
    assert.equal(await page.locator(tid('host-telemetry-empty')).count(), 0);
    // The switch panel lists its three queues and nothing else.
    assert.deepEqual(await page.locator(tid('telemetry-queue')).evaluateAll((ls) => ls.map((l) => l.dataset.source)),
      ['sw0/p0/lossless', kHotQueue, 'sw0/p1/lossless']);
    // Every traffic source and the RDMA port listed, all ticked by default.
    const listed = await page.locator(tid('host-telemetry-source')).evaluateAll((ls) => ls.map((l) => l.dataset.source));
    assert.deepEqual(listed, [...kTrafficSources, kRdmaPort]);
    const ticked = await page.locator(`${tid('host-telemetry-source')}:has(input:checked)`)
      .evaluateAll((ls) => ls.map((l) => l.dataset.source));
    assert.deepEqual(ticked, [...kTrafficSources, kRdmaPort]);
    // The RDMA counter shown first: the error counter that grew (in the fault window).
    assert.equal(await page.inputValue(tid('host-telemetry-rdma-metric')), 'rcvd_seq_err');
    assert.deepEqual(await page.locator(`${tid('host-telemetry-rdma-metric')} option`).allTextContents(),
      ['rcvd_seq_err', 'sent_pkts']);
    const legend = async (box) => page.locator(`${tid(box)} .u-legend .u-series`).allTextContents();
    const trafficLegend = await legend('host-telemetry-traffic-plot');
    for (const label of ['traffic/incast/h0 sent', 'traffic/incast/h1 sent', 'traffic/incast/h3/sink received']) {
      assert.ok(trafficLegend.some((l) => l.includes(label)), `no "${label}" in the traffic legend: ${JSON.stringify(trafficLegend)}`);
    }
    assert.equal(trafficLegend.length, 1 + 3, 'three traffic series, plus x');
    const rdmaLegend = await legend('host-telemetry-rdma-plot');
    assert.equal(rdmaLegend.length, 1 + 1, `RDMA legend: ${JSON.stringify(rdmaLegend)}`);
    assert.ok(rdmaLegend[1].includes(`${kRdmaPort} rcvd_seq_err`), `RDMA legend: ${JSON.stringify(rdmaLegend)}`);
    // Drawn in their swatches' colours (web/src/views/run_host_telemetry.js: the palette in the
    // order of the list): h0 first, the RDMA port fourth.
    const palette = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f'];
    for (const [box, color, what] of [['host-telemetry-traffic-plot', palette[0], 'h0'], ['host-telemetry-rdma-plot', palette[3], 'the port']]) {
      const pixels = await canvasColorCounts(`${tid(box)} canvas`, [color]);
      console.log(`# ${box}: ${pixels.counts[0]} px in ${what}'s colour`);
      assert.ok(pixels.counts[0] > 100, `${box}: ${what} is barely drawn (${pixels.counts[0]} px)`);
    }
    // The busbw plot's x axis and shading, with the panel's own testids.
    const busbwWindow = await page.locator(`${tid('busbw-plot')} ${tid('fault-window')}`).boundingBox();
    for (const box of ['host-telemetry-traffic-plot', 'host-telemetry-rdma-plot']) {
      const shaded = page.locator(`${tid(box)} ${tid('host-telemetry-fault-window')}`);
      assert.equal(await shaded.count(), 1, `${box}: fault windows`);
      assert.match(await shaded.textContent(), /step 0: link_flap/);
      const b = await shaded.boundingBox();
      console.log(`# ${box} fault window x ${b.x.toFixed(0)} w ${b.width.toFixed(0)}; busbw's x ${busbwWindow.x.toFixed(0)} w ${busbwWindow.width.toFixed(0)}`);
      assert.ok(Math.abs(b.x - busbwWindow.x) < 3 && Math.abs(b.width - busbwWindow.width) < 3,
        `${box}: the fault window is not where the busbw plot has it (x axes differ)`);
      assert.equal(await page.locator(`${tid(box)} ${tid('host-telemetry-baseline-window')}`).count(), 1);
    }
    assert.equal(await page.locator(tid('fault-window')).count(), 1, 'the busbw plot\'s own windows are still one');
    assert.equal(await page.locator(tid('telemetry-fault-window')).count(), 3, 'the switch panel\'s windows are still three');
    await sleep(2500);  // longer than the page's poll: a finished run is not polled
    const reads = ctx.requests.slice(readsBefore).filter((u) => u.includes(`/v1/runs/${ctx.runUi}/telemetry`));
    assert.equal(reads.length, 1, `telemetry reads of a finished run's page: ${JSON.stringify(reads)}`);
    await page.locator(tid('host-telemetry')).scrollIntoViewIfNeeded();
    await checkPage('run-host-telemetry');

    // Another counter picked: its rate is plotted instead.
    await page.selectOption(tid('host-telemetry-rdma-metric'), 'sent_pkts');
    await page.waitForFunction((sel) => [...document.querySelectorAll(sel)].some((n) => n.textContent.includes('rdma/h3/rxe0/1 sent_pkts')),
      `${tid('host-telemetry-rdma-plot')} .u-legend .u-series`);
    assert.equal((await legend('host-telemetry-rdma-plot')).length, 1 + 1);
    // The sink unticked: its line goes, the generators' stay.
    await page.locator(`${tid('host-telemetry-source')}[data-source="${kTrafficSources[2]}"] input`).uncheck();
    await page.waitForFunction((sel) => document.querySelectorAll(sel).length === 1 + 2,
      `${tid('host-telemetry-traffic-plot')} .u-legend .u-series`);
    assert.equal(await page.inputValue(tid('host-telemetry-rdma-metric')), 'sent_pkts', 'the picked counter stays picked');
    await page.screenshot({ path: join(artifacts, 'run-host-telemetry-full.png'), fullPage: true });
  });

  step('compare view: two runs of the scenario overlaid, metrics table', async () => {
    const { page } = ctx;
    const [a, b] = [await api('GET', `/v1/runs/${ctx.runUi}`), await waitForRunFinal(ctx.runApi)];
    assert.ok(b.state !== 'error', `run ${ctx.runApi} ended in error: ${b.error}`);
    await page.goto(`${ctx.base}#/runs?scenario=${kScenario}`);
    for (const id of [ctx.runUi, ctx.runApi]) {
      await page.waitForSelector(`${tid('run-row')}[data-run-id="${id}"]`);
      await page.locator(`${tid('run-row')}[data-run-id="${id}"] ${tid('run-select')}`).check();
    }
    await checkPage('runs-selected');
    await page.click(tid('compare-selected'));
    await page.waitForSelector(`${tid('compare-plot')} canvas`);
    await page.waitForSelector(`${tid('score-history')} canvas`);
    assert.match(page.url(), new RegExp(`#/compare\\?a=${ctx.runUi}&b=${ctx.runApi}$`));

    const legend = await page.locator(`${tid('compare-plot')} .u-legend .u-series`).allTextContents();
    assert.ok(legend.some((l) => l.includes(`A #${ctx.runUi}`)) && legend.some((l) => l.includes(`B #${ctx.runApi}`)),
      `compare legend: ${JSON.stringify(legend)}`);
    const pixels = await canvasColorCounts(`${tid('compare-plot')} canvas`, [kColorA, kColorB]);
    console.log(`# compare canvas: A-coloured ${pixels.counts[0]} px, B-coloured ${pixels.counts[1]} px`);
    assert.ok(pixels.counts[0] > 200, `series A barely drawn: ${pixels.counts[0]} px`);
    assert.ok(pixels.counts[1] > 200, `series B barely drawn: ${pixels.counts[1]} px`);
    assert.equal(await page.locator(`${tid('compare-plot')} .fc-window.fault-a`).count(), 1);
    assert.equal(await page.locator(`${tid('compare-plot')} .fc-window.fault-b`).count(), 1);

    const rows = page.locator(tid('delta-row'));
    assert.equal(await rows.count(), 3 + 7, 'score, baseline busbw, duration and seven per step');
    const firstProgress = await page.locator(tid('delta-row')).filter({ hasText: 'step 0 first progress' }).count();
    assert.equal(firstProgress, 1, 'the first-progress row');
    const scoreCells = await rows.first().locator('td').allTextContents();
    const fmt = (v) => (typeof v === 'number' ? v.toFixed(1) : '–');
    assert.deepEqual(scoreCells.slice(0, 3), ['score', fmt(a.score), fmt(b.score)]);
    const delta = typeof a.score === 'number' && typeof b.score === 'number' ? b.score - a.score : null;
    if (delta !== null) assert.equal(Number(scoreCells[3]), Number(delta.toFixed(1)));
    assert.equal(await page.locator(tid('compare-warning')).count(), 0);
    await checkPage('compare');
    await page.screenshot({ path: join(artifacts, 'compare-full.png'), fullPage: true });
  }, 150000);

  step('long run: 300,000 samples plotted from their envelope, and the one stall still drawn', async () => {
    const { page } = ctx;
    // A copy of the UI run (same scenario, result and windows) holding 4 ranks x 75,000
    // iterations over the UI run's sampled span, all of 3 ms but rank 1's iteration 37,500, a
    // 700 ms stall: written into serve's database with the sqlite3 CLI.
    const perRank = 75000;
    const span = JSON.parse(sqlite(`SELECT json_array(MIN(start_ms), MAX(start_ms)) FROM samples WHERE run_id = ${ctx.runUi}`));
    const step = (span[1] - span[0]) / perRank;
    const id = Number(sqlite(`INSERT INTO runs (scenario_name, scenario, fabric, state, created_ms, started_ms, finished_ms, score, result, attributes, error)
      SELECT scenario_name, scenario, fabric, state, created_ms, started_ms, finished_ms, score, result, attributes, error FROM runs WHERE id = ${ctx.runUi};
      SELECT last_insert_rowid();`));
    sqlite(`INSERT INTO run_transitions (run_id, state, wall_ms) SELECT ${id}, state, wall_ms FROM run_transitions WHERE run_id = ${ctx.runUi};
      INSERT INTO events (run_id, t_ms, wall_ms, kind, detail) SELECT ${id}, t_ms, wall_ms, kind, detail FROM events WHERE run_id = ${ctx.runUi};
      WITH RECURSIVE it(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM it WHERE i < ${perRank - 1}),
        rk(r) AS (VALUES (0), (1), (2), (3))
      INSERT INTO samples (run_id, rank, iteration, start_ms, duration_ms, bytes)
        SELECT ${id}, r, i, ${span[0]} + i * ${step}, CASE WHEN r = 1 AND i = ${perRank / 2} THEN 700 ELSE 3 END, 1048576
        FROM it, rk ORDER BY i, r;`);
    assert.equal(Number(sqlite(`SELECT COUNT(*) FROM samples WHERE run_id = ${id}`)), 4 * perRank);

    const readsBefore = ctx.requests.length;
    const envelope = page.waitForResponse((r) => r.url().includes(`/v1/runs/${id}/samples?max_points=`));
    const started = Date.now();
    await page.goto(`${ctx.base}#/runs/${id}`);
    const served = await (await envelope).json();
    await page.waitForSelector(`${tid('busbw-plot')} canvas`);
    await page.waitForFunction((sel) => document.querySelectorAll(sel).length >= 5, `${tid('busbw-plot')} .u-legend .u-series`);
    const drawnAfter = Date.now() - started;
    const reads = ctx.requests.slice(readsBefore).filter((u) => u.includes(`/v1/runs/${id}/samples`));
    console.log(`# long run ${id}: ${4 * perRank} samples stored, ${served.samples.length} served for the plot ` +
      `(${reads.length} read(s): ${reads.map((u) => u.slice(u.indexOf('/samples'))).join(', ')}), plot drawn ${drawnAfter} ms after navigation`);
    assert.ok(reads.every((u) => /max_points=\d+/.test(u)), `the page read raw samples: ${reads}`);
    assert.ok(served.samples.length <= 4 * 4000, `${served.samples.length} samples served for a plot`);
    assert.ok(served.samples.some((x) => x.rank === 1 && x.duration_ms === 700), 'the stall is not in what the plot got');

    // On the canvas: every rank's line is flat at the top but for the stall, rank 1's drop to
    // about zero. So pixels in rank 1's colour in the lowest quarter of the plot area, and none
    // of the other ranks'.
    const low = await page.evaluate(({ sel, overSel, rgbs }) => {
      const canvas = document.querySelector(sel);
      const rect = canvas.getBoundingClientRect();
      const over = document.querySelector(overSel).getBoundingClientRect();
      const scale = canvas.width / rect.width;
      const y0 = Math.round((over.top + 0.75 * over.height - rect.top) * scale);
      const y1 = Math.round((over.bottom - rect.top) * scale);
      const x0 = Math.round((over.left - rect.left) * scale);
      const x1 = Math.round((over.right - rect.left) * scale);
      const { data } = canvas.getContext('2d').getImageData(x0, y0, x1 - x0, y1 - y0);
      const counts = rgbs.map(() => 0);
      for (let i = 0; i < data.length; i += 4) {
        if (data[i + 3] < 128) continue;
        rgbs.forEach(([r, g, b], k) => {
          if (Math.abs(data[i] - r) + Math.abs(data[i + 1] - g) + Math.abs(data[i + 2] - b) < 60) counts[k]++;
        });
      }
      return counts;
    }, { sel: `${tid('busbw-plot')} canvas`, overSel: `${tid('busbw-plot')} .u-over`, rgbs: kRankColors.map(hexToRgb) });
    console.log(`# long run ${id}: rank-coloured pixels in the plot's lowest quarter ${JSON.stringify(low)}`);
    assert.ok(low[1] >= 5, `rank 1's stall is not drawn down to the bottom: ${JSON.stringify(low)}`);
    assert.ok(low[0] + low[2] + low[3] <= 2, `other ranks drawn low: ${JSON.stringify(low)}`);
    await checkPage('long-run');
  }, 150000);

  step('viewer token: no start, save, new-scenario or abort controls', async () => {
    const { page } = ctx;
    const created = await api('POST', '/v1/tokens', { name: 'browser-viewer', role: 'viewer' });
    assert.equal(created.role, 'viewer');
    ctx.viewerToken = created.token;
    // A run in progress for the viewer to look at (an admin would see Abort on it): a long
    // baseline-only run (no fault), aborted below.
    const longDoc = { ...kScenarioDoc, name: `${kScenario}-long`, baseline_ms: 60000, steps: [], recovery_ms: 500,
      max_duration_ms: 120000 };
    ctx.runViewer = (await api('POST', '/v1/runs', { scenario: longDoc, fabric: ctx.fabric })).id;

    await page.click(tid('logout'));
    await page.waitForSelector(tid('login-form'));
    await login(ctx.viewerToken);
    assert.equal((await page.textContent(tid('role'))).trim(), 'viewer');

    await page.goto(`${ctx.base}#/scenarios`);
    await page.waitForSelector(`${tid('scenario-row')}[data-name="${kScenario}"]`);
    assert.equal(await page.locator(tid('new-scenario')).count(), 0, 'a viewer sees "New scenario"');
    await page.goto(`${ctx.base}#/scenarios/${kScenario}`);
    await page.waitForSelector(tid('scenario-json'));
    await page.waitForSelector(tid('fabric-select'));
    assert.equal(await page.locator(tid('start-run-button')).count(), 0, 'a viewer sees the start button');
    assert.equal(await page.locator(tid('scenario-editor')).count(), 0, 'a viewer sees the editor');
    assert.equal(await page.locator(tid('save-scenario')).count(), 0, 'a viewer sees Save');
    await checkPage('viewer-scenario');

    await page.goto(`${ctx.base}#/runs/${ctx.runViewer}`);
    await page.waitForSelector(tid('run-state'));
    const state = (await page.textContent(tid('run-state'))).trim();
    assert.ok(kInProgress.has(state), `run ${ctx.runViewer} already ${state}: the viewer check needs a run in progress`);
    assert.equal(await page.locator(tid('abort-button')).count(), 0, `a viewer sees the abort button on a ${state} run`);
    await page.waitForSelector(`${tid('busbw-plot')} canvas`);
    assert.equal(await page.locator(tid('abort-button')).count(), 0);
    // A live run's telemetry is followed: a first batch is plotted, the next one is read with
    // after_ms (only what is new) and drawn without a reload.
    const counters = {};
    const loadsBefore = ctx.loads;
    seedTelemetry(ctx.runViewer, 0, 1000, 400, 800, counters);
    await page.waitForSelector(`${tid('telemetry-rate-plot')} canvas`, { timeout: 10000 });
    const liveQueues = await page.locator(`${tid('telemetry-queue')}:has(input:checked)`).evaluateAll((ls) => ls.map((l) => l.dataset.source));
    assert.deepEqual(liveQueues, [kHotQueue], 'live, without an analysis: the queue that dropped most is shown');
    assert.match(await page.textContent(tid('host-telemetry-empty')), /^no traffic or RDMA counters yet/,
      'live with switch telemetry only: the traffic and RDMA panel waits for some');
    const readsBefore = ctx.requests.length;
    seedTelemetry(ctx.runViewer, 1100, 2000, 1500, 1800, counters);
    const incremental = new RegExp(`/v1/runs/${ctx.runViewer}/telemetry\\?after_ms=\\d`);
    for (const deadline = Date.now() + 10000; !ctx.requests.slice(readsBefore).some((u) => incremental.test(u)); await sleep(200)) {
      if (Date.now() > deadline) throw new Error(`no incremental telemetry read in 10 s: ${ctx.requests.slice(readsBefore)}`);
    }
    assert.equal(ctx.loads, loadsBefore, 'the page was reloaded while following the telemetry');
    assert.equal(await page.locator(`${tid('telemetry-rate-plot')} canvas`).count(), 1);
    await checkPage('viewer-run-live');

    // The viewer's page follows the run to its end (aborted by the admin through the API).
    await api('POST', `/v1/runs/${ctx.runViewer}/abort`);
    await page.waitForFunction((sel) => document.querySelector(sel)?.textContent === 'aborted', tid('run-state'), { timeout: 30000 });
    assert.equal(await page.locator(tid('abort-button')).count(), 0);
    await page.waitForSelector(tid('run-stop'));
    assert.match(await page.textContent(tid('run-stop')), /abort_request/);
    await checkPage('viewer-run-aborted');
  }, 90000);

  // A fault in force that no running run owns. serve reads the journal only at start-up (to
  // revert what it lists), so the way to get one into a live serve without breaking anything is
  // what a run does before it applies a fault, done by hand: journal it, then apply it. The row
  // goes into serve's own database through the sqlite3 CLI (same JSON shapes as the engine's
  // journalIntent: the fault document, and link_flap's capture() as the prior state), tied to the
  // run the viewer step aborted, i.e. exactly "a fault a run left behind"; then h1's switch port
  // is taken down with ip(8), as link_flap's apply() does.
  step('faults page (viewer): a fault a finished run left behind is listed, without a revert control', async () => {
    const { page } = ctx;
    const owner = await waitForRunFinal(ctx.runViewer, 30000);
    assert.deepEqual((await api('GET', '/v1/faults')).faults, [], 'faults in force before the test made one');
    const before = portState('p1');
    assert.ok(before.up, `${kSwitchNs}/p1 is not up before the test: ${JSON.stringify(before)}`);
    const fault = { kind: 'link_flap', target: { netns: kSwitchNs, ifname: 'p1' }, params: { down_ms: 60000 } };
    const intentMs = Date.now();
    ctx.leftFault = Number(sqlite('INSERT INTO journal (run_id, fault, prior, state, intent_ms) VALUES ' +
      `(${ctx.runViewer}, ${sqlText(JSON.stringify(fault))}, ${sqlText(JSON.stringify({ admin_up: true }))}, ` +
      `'intent', ${intentMs}); SELECT last_insert_rowid();`));
    assert.ok(ctx.leftFault > 0, 'no journal row id');
    run('ip', ['-n', kSwitchNs, 'link', 'set', 'dev', 'p1', 'down']);
    sqlite(`UPDATE journal SET state = 'applied' WHERE id = ${ctx.leftFault}`);
    assert.equal(portState('p1').up, false, 'p1 is still up after ip link set down');

    const { faults } = await api('GET', '/v1/faults');
    assert.equal(faults.length, 1, `GET /v1/faults: ${JSON.stringify(faults)}`);
    const [f] = faults;
    assert.equal(f.id, ctx.leftFault);
    assert.equal(f.kind, 'link_flap');
    assert.deepEqual(f.target, fault.target);
    assert.equal(f.state, 'applied');
    assert.equal(f.run_id, ctx.runViewer);
    assert.equal(f.run_state, owner.state);
    assert.equal(f.owned_by_running_run, false);

    await page.click('nav a[data-nav="faults"]');
    const row = page.locator(`${tid('fault-row')}[data-fault-id="${ctx.leftFault}"]`);
    await row.waitFor();
    assert.equal(await page.locator(tid('fault-row')).count(), 1);
    assert.equal((await row.locator(tid('fault-kind')).textContent()).trim(), 'link_flap');
    assert.equal((await row.locator(tid('fault-target')).textContent()).trim(), `${kSwitchNs} / p1`);
    assert.equal((await row.locator(tid('fault-agent')).textContent()).trim(), 'local');
    assert.equal((await row.locator(tid('fault-state')).textContent()).trim(), 'applied');
    assert.equal(await row.locator(tid('fault-owner-link')).getAttribute('href'), `#/runs/${ctx.runViewer}`);
    assert.equal((await row.locator(tid('fault-owner-state')).textContent()).trim(), owner.state);
    assert.match(await row.locator(tid('fault-age')).textContent(), /^\d+ s$|^\d+ min \d+ s$/);
    assert.equal(await page.locator(tid('revert-button')).count(), 0, 'a viewer sees "Revert now"');
    assert.equal(await page.locator(tid('abort-owner-button')).count(), 0, 'a viewer sees an abort button');
    assert.ok(await page.locator(tid('faults-viewer-note')).isVisible(), 'no note tells the viewer why there is no control');
    // The page refreshes by itself (every 2 s): the age moves on without a reload.
    const requestsBefore = ctx.requests.filter((u) => u.endsWith('/v1/faults')).length;
    await sleep(2500);
    const polls = ctx.requests.filter((u) => u.endsWith('/v1/faults')).length - requestsBefore;
    assert.ok(polls >= 1, `the Faults page did not refresh in 2.5 s (${polls} requests)`);
    await checkPage('faults-viewer');
  });

  step('faults page (operator): "Revert now" brings the port back up', async () => {
    const { page } = ctx;
    const created = await api('POST', '/v1/tokens', { name: 'browser-operator', role: 'operator' });
    assert.equal(created.role, 'operator');
    ctx.operatorToken = created.token;
    await page.click(tid('logout'));
    await page.waitForSelector(tid('login-form'));
    await login(ctx.operatorToken);
    assert.equal((await page.textContent(tid('role'))).trim(), 'operator');
    await page.click('nav a[data-nav="faults"]');
    const row = page.locator(`${tid('fault-row')}[data-fault-id="${ctx.leftFault}"]`);
    const button = row.locator(tid('revert-button'));
    await button.waitFor();
    assert.ok(await button.isEnabled(), '"Revert now" is disabled for a fault no running run owns');
    assert.equal(await page.locator(tid('faults-viewer-note')).count(), 0);
    await checkPage('faults-operator');

    await button.click();
    await page.waitForSelector(tid('faults-empty'), { timeout: 15000 });
    assert.match(await page.textContent(tid('faults-empty')), /No faults in force on the fabric/);
    assert.match(await page.textContent(tid('fault-action-message')), new RegExp(`Reverted fault #${ctx.leftFault}`));
    assert.equal(await page.locator(tid('fault-action-error')).count(), 0);
    // Witnesses that are not the page: the kernel, the journal row, the API.
    const after = portState('p1');
    assert.ok(after.up, `${kSwitchNs}/p1 is still down after "Revert now": ${JSON.stringify(after)}`);
    console.log(`# fault ${ctx.leftFault} reverted from the page: ${kSwitchNs}/p1 ${JSON.stringify(after)}`);
    assert.equal(sqlite(`SELECT state FROM journal WHERE id = ${ctx.leftFault}`), 'reverted');
    assert.deepEqual((await api('GET', '/v1/faults')).faults, []);
    await checkPage('faults-reverted');
  });

  step('faults page (operator): a running run\'s fault offers aborting the run instead', async () => {
    const { page } = ctx;
    const doc = { ...kScenarioDoc, name: `${kScenario}-hold`, baseline_ms: 1000, recovery_ms: 500,
      max_duration_ms: 120000,
      steps: [{ kind: 'link_flap', target: { host: 'h0', side: 'switch' }, at_ms: 0, params: { down_ms: 60000 } }] };
    ctx.runOwner = (await api('POST', '/v1/runs', { scenario: doc, fabric: ctx.fabric })).id;
    let f = null;
    for (const deadline = Date.now() + 60000; !f; await sleep(200)) {
      f = (await api('GET', '/v1/faults')).faults.find((x) => x.run_id === ctx.runOwner && x.state === 'applied');
      if (!f && Date.now() > deadline) throw new Error(`run ${ctx.runOwner} applied no fault in 60 s`);
    }
    assert.equal(f.owned_by_running_run, true, JSON.stringify(f));
    assert.equal(portState(f.target.ifname).up, false, `the run's fault is not in force: ${JSON.stringify(f)}`);
    const row = page.locator(`${tid('fault-row')}[data-fault-id="${f.id}"][data-owned="true"]`);
    await row.waitFor({ timeout: 10000 });
    assert.equal(await row.getAttribute('data-kind'), 'link_flap');
    assert.equal((await row.locator(tid('fault-owner-link')).textContent()).trim(), `#${ctx.runOwner}`);
    assert.ok(await row.locator(tid('revert-button')).isDisabled(), '"Revert now" is enabled on a running run\'s fault');
    assert.match(await row.locator(tid('fault-owned-note')).textContent(), new RegExp(`run #${ctx.runOwner} is running`));
    const abort = row.locator(tid('abort-owner-button'));
    assert.equal((await abort.textContent()).trim(), `Abort run #${ctx.runOwner}`);
    await checkPage('faults-owned-by-running-run');

    page.once('dialog', (d) => d.accept());
    await abort.click();
    await page.waitForSelector(tid('faults-empty'), { timeout: 30000 });
    assert.match(await page.textContent(tid('fault-action-message')), new RegExp(`Abort of run #${ctx.runOwner} requested`));
    const ended = await waitForRunFinal(ctx.runOwner, 30000);
    assert.equal(ended.state, 'aborted');
    assert.ok(portState(f.target.ifname).up, `${kSwitchNs}/${f.target.ifname} still down after the abort`);
    await checkPage('faults-after-abort');
  }, 90000);
});
