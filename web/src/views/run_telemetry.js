// The run page's switch telemetry panel (under the busbw plot): per queue, tx Mbit/s, backlog KiB
// and drops/s with ECN marks/s in three small plots whose plotting areas line up with the busbw
// plot's (one y axis each, of the same width), on its x axis and with the same fault shading.
// Shows each step's hottest queue by default; every queue can be ticked. Switch queues only: the
// run page's telemetry store (telemetry_feed.js) also holds the sources run_host_telemetry.js
// plots. The run page decides when to read: once for a finished run, every few seconds while live.
import { RANK_COLORS } from '../plot.js';
import { SourceType, alignOnX, defaultSources, queuePlotPoints, sourcesOf } from '../telemetry.js';
import { telemetryPlot } from '../telemetry_plot.js';
import { el, errorBox } from '../util.js';

export const NO_TELEMETRY = "no switch telemetry (the fabric's ports are not modelled: lab up --link-rate ...)";

// store: the run's telemetry store (telemetry_feed.js); link: the busbw plot's xLink; steps():
// run.result.analysis.steps (hottest queues). Returns {node, show(outcome) (after each read of the
// feed), setOverlays(overlays), draw(), destroy()}.
export function telemetryPanel({ store, link, steps }) {
  const node = el('div', { class: 'telemetry', testid: 'telemetry' });
  const queuesBox = el('div', { class: 'telemetry-queues', testid: 'telemetry-queues' });
  const rateBox = el('div', { class: 'plot', testid: 'telemetry-rate-plot' });
  const backlogBox = el('div', { class: 'plot', testid: 'telemetry-backlog-plot' });
  const lossBox = el('div', { class: 'plot', testid: 'telemetry-loss-plot' });
  const note = el('p', { class: 'muted small', testid: 'telemetry-note' });
  const message = el('div');
  const plots = el('div', {}, queuesBox,
    el('h3', {}, 'Queue tx rate'), rateBox,
    el('h3', {}, 'Queue backlog'), backlogBox,
    el('h3', {}, 'Drops and ECN marks'), lossBox, note);
  plots.hidden = true;
  node.append(message, plots);

  let loaded = false;
  let closed = false;
  let live = true;
  let dirty = false;
  let overlays = {};
  let chosen = null;  // the sources the user ticked; null until they tick one
  let shownSources = '';
  let handles = null;  // {key, rate, backlog, loss}

  const selected = () => chosen || defaultSources(steps(), store);

  const hottestSources = () => [...new Set((steps() || []).map((s) => s && s.hottest_queue && s.hottest_queue.source).filter(Boolean))];

  function renderQueues(sources, picked) {
    const hottest = new Set(hottestSources());
    queuesBox.replaceChildren(el('span', { class: 'muted small' }, 'queues: '),
      ...sources.map((src, i) => el('label', { class: 'telemetry-queue', testid: 'telemetry-queue', dataset: { source: src } },
        el('input', { type: 'checkbox', testid: 'telemetry-queue-toggle', checked: picked.includes(src),
          onchange: () => {
            chosen = [...queuesBox.querySelectorAll('input:checked')].map((c) => c.closest('label').dataset.source);
            dirty = true;
            draw();
          } }),
        el('span', { class: 'swatch', style: `background:${colorOf(i)}` }),
        src, hottest.has(src) ? el('span', { class: 'muted small' }, ' (hottest)') : '')));
  }

  function draw() {
    if (!dirty || !loaded || closed) return;
    dirty = false;
    const sources = sourcesOf(store, SourceType.SWITCH_QUEUE);
    if (!sources.length) {
      plots.hidden = true;
      message.replaceChildren(el('p', { class: 'muted', testid: 'telemetry-empty' },
        live ? 'no switch telemetry yet (none is sampled on a fabric whose ports are not modelled: lab up --link-rate ...)' : NO_TELEMETRY));
      return;
    }
    message.replaceChildren();
    plots.hidden = false;
    const picked = selected().filter((s) => sources.includes(s));
    const queuesKey = `${sources.join()}|${picked.join()}|${hottestSources().join()}`;
    if (queuesKey !== shownSources) { renderQueues(sources, picked); shownSources = queuesKey; }
    const points = picked.map((src) => queuePlotPoints(store, src));
    const rateData = alignOnX(points.map((p) => p.tx_mbps));
    const backlogData = alignOnX(points.map((p) => p.backlog_kib));
    const lossData = alignOnX(points.flatMap((p) => [p.drops_per_s, p.marks_per_s]));
    note.textContent = picked.length
      ? `every 100 ms, per queue: tx rate, backlog, drops (solid) and ECN marks (dashed) per second. ` +
        'A gap: the counter went back (queue made again) or the switch was not read.'
      : 'Tick a queue to plot it.';
    const key = picked.join();
    if (handles && handles.key === key) {
      handles.rate.update(rateData, overlays);
      handles.backlog.update(backlogData, overlays);
      handles.loss.update(lossData, overlays);
      return;
    }
    destroyPlots();
    if (!picked.length) return;
    const colors = picked.map((src) => colorOf(sources.indexOf(src)));
    handles = {
      key,
      rate: telemetryPlot(rateBox, {
        axes: [{ scale: 'mbps', label: 'tx (Mbit/s)', unit: 'Mbit/s' }],
        series: picked.map((src, i) => ({ label: `${src} tx`, scale: 'mbps', color: colors[i] })),
        data: rateData, overlays, link, height: 170,
      }),
      backlog: telemetryPlot(backlogBox, {
        axes: [{ scale: 'kib', label: 'backlog (KiB)', unit: 'KiB' }],
        series: picked.map((src, i) => ({ label: `${src} backlog`, scale: 'kib', color: colors[i] })),
        data: backlogData, overlays, link, height: 150,
      }),
      loss: telemetryPlot(lossBox, {
        axes: [{ scale: 'per_s', label: 'per second', unit: '/s' }],
        series: picked.flatMap((src, i) => [
          { label: `${src} drops`, scale: 'per_s', color: colors[i] },
          { label: `${src} ECN marks`, scale: 'per_s', color: colors[i], dash: [6, 4] }]),
        data: lossData, overlays, link, height: 170,
      }),
    };
  }

  function destroyPlots() {
    if (!handles) return;
    handles.rate.destroy();
    handles.backlog.destroy();
    handles.loss.destroy();
    rateBox.replaceChildren();
    backlogBox.replaceChildren();
    lossBox.replaceChildren();
    handles = null;
  }

  // After a read of the feed: {added, first, live, error} (telemetry_feed.js), null when refused.
  function show(outcome) {
    if (!outcome) return;
    live = outcome.live;
    loaded = true;
    if (outcome.error) {
      const none = outcome.error.status === 404 && !sourcesOf(store, SourceType.SWITCH_QUEUE).length;
      message.replaceChildren(none ? el('p', { class: 'muted', testid: 'telemetry-empty' }, NO_TELEMETRY)
        : errorBox(outcome.error, 'telemetry-error'));
      return;
    }
    // The final read (not live) redraws even without new points: the hottest queues are known now.
    if (outcome.added || outcome.first || !live) dirty = true;
    draw();
  }

  return {
    node,
    show,
    setOverlays(o) { overlays = o; dirty = true; },
    draw,
    destroy() { closed = true; destroyPlots(); },
  };
}

function colorOf(i) {
  return RANK_COLORS[(i + 4) % RANK_COLORS.length];
}
