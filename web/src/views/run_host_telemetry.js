// The run page's "Traffic and RDMA counters" panel, under the switch telemetry: the goodput of a
// traffic fault's generators (each sending host, and the sink) and the per-second rate of one RDMA
// port counter, in two small plots on the busbw plot's x axis with its fault shading, as
// run_telemetry.js does for the switch queues and from the same store (telemetry_feed.js). Every
// generator and port is ticked by default; the counter is picked in a list, by default the error
// counter that grew most (host_telemetry.js, where the points are built).
import { RANK_COLORS } from '../plot.js';
import { alignOnX } from '../telemetry.js';
import {
  defaultRdmaCounter, isSink, rdmaCounters, rdmaPorts, rdmaRatePoints, trafficGoodputPoints, trafficSources,
} from '../host_telemetry.js';
import { telemetryPlot } from '../telemetry_plot.js';
import { el, errorBox } from '../util.js';

export const NO_HOST_TELEMETRY =
  'no traffic or RDMA counters (the run has no traffic fault, incast or hot_spot, and its hosts have no RDMA devices)';
const NO_HOST_TELEMETRY_YET =
  'no traffic or RDMA counters yet (a traffic fault\'s generators are read while it is in force; RDMA ports only on hosts with RDMA devices)';

// store: the run's telemetry store (telemetry_feed.js); link: the busbw plot's xLink.
// Returns {node, show(outcome) (after each read of the feed), setOverlays(overlays), draw(), destroy()}.
export function hostTelemetryPanel({ store, link }) {
  const node = el('div', { class: 'telemetry', testid: 'host-telemetry' });
  const sourcesBox = el('div', { testid: 'host-telemetry-sources' });
  const trafficBox = el('div', { class: 'plot', testid: 'host-telemetry-traffic-plot' });
  const rdmaBox = el('div', { class: 'plot', testid: 'host-telemetry-rdma-plot' });
  const counterSelect = el('select', { testid: 'host-telemetry-rdma-metric', onchange: () => {
    chosenCounter = counterSelect.value;
    dirty = true;
    draw();
  } });
  const trafficSection = el('div', {}, el('h3', {}, 'Traffic generators: goodput'), trafficBox);
  const rdmaSection = el('div', {},
    el('h3', {}, 'RDMA port counter per second ', el('label', { class: 'small muted' }, 'counter: ', counterSelect)),
    rdmaBox);
  const note = el('p', { class: 'muted small', testid: 'host-telemetry-note' });
  const message = el('div');
  const plots = el('div', {}, sourcesBox, trafficSection, rdmaSection, note);
  plots.hidden = true;
  node.append(message, plots);

  let loaded = false;
  let closed = false;
  let live = true;
  let dirty = false;
  let overlays = {};
  let chosen = null;  // the sources the user ticked; null until they tick or untick one
  let chosenCounter = null;  // the RDMA counter the user picked; null until they pick one
  let shownSources = '';
  let shownCounters = '';
  const trafficSlot = { key: null, handle: null };
  const rdmaSlot = { key: null, handle: null };

  function renderSources(traffic, ports, picked, colorOf) {
    const row = (title, sources) => el('div', { class: 'telemetry-queues' },
      el('span', { class: 'muted small' }, title),
      ...sources.map((src) => el('label', { class: 'telemetry-queue', testid: 'host-telemetry-source', dataset: { source: src } },
        el('input', { type: 'checkbox', testid: 'host-telemetry-source-toggle', checked: picked.includes(src),
          onchange: () => {
            chosen = [...sourcesBox.querySelectorAll('input:checked')].map((c) => c.closest('label').dataset.source);
            dirty = true;
            draw();
          } }),
        el('span', { class: 'swatch', style: `background:${colorOf(src)}` }),
        src)));
    sourcesBox.replaceChildren(
      ...(traffic.length ? [row('traffic: ', traffic)] : []),
      ...(ports.length ? [row('RDMA ports: ', ports)] : []));
  }

  function renderCounters(counters, counter) {
    counterSelect.replaceChildren(...counters.map((c) => el('option', { value: c, selected: c === counter }, c)));
    counterSelect.value = counter;
  }

  function draw() {
    if (!dirty || !loaded || closed) return;
    dirty = false;
    const traffic = trafficSources(store);
    const ports = rdmaPorts(store);
    const all = [...traffic, ...ports];
    if (!all.length) {
      plots.hidden = true;
      destroyPlots();
      message.replaceChildren(el('p', { class: 'muted', testid: 'host-telemetry-empty' },
        live ? NO_HOST_TELEMETRY_YET : NO_HOST_TELEMETRY));
      return;
    }
    message.replaceChildren();
    plots.hidden = false;
    trafficSection.hidden = !traffic.length;
    rdmaSection.hidden = !ports.length;
    const colorOf = (src) => RANK_COLORS[all.indexOf(src) % RANK_COLORS.length];
    const picked = chosen ? all.filter((s) => chosen.includes(s)) : all;
    const sourcesKey = `${all.join()}|${picked.join()}`;
    if (sourcesKey !== shownSources) { renderSources(traffic, ports, picked, colorOf); shownSources = sourcesKey; }
    const counters = rdmaCounters(store, ports);
    const counter = chosenCounter && counters.includes(chosenCounter) ? chosenCounter : defaultRdmaCounter(store, ports);
    const countersKey = `${counters.join()}|${counter}`;
    if (countersKey !== shownCounters) { renderCounters(counters, counter); shownCounters = countersKey; }

    // A source that appears (live) can move the others' colours: the keys hold every source.
    const pickedTraffic = picked.filter((s) => traffic.includes(s));
    syncPlot(trafficSlot, trafficBox, pickedTraffic.length ? `${pickedTraffic.join()}|${all.join()}` : '',
      alignOnX(pickedTraffic.map((s) => trafficGoodputPoints(store, s))),
      (data) => telemetryPlot(trafficBox, {
        axes: [{ scale: 'mbps', label: 'goodput (Mbit/s)', unit: 'Mbit/s' }],
        series: pickedTraffic.map((s) => isSink(store, s)
          ? { label: `${s} received`, scale: 'mbps', color: colorOf(s), dash: [6, 4] }
          : { label: `${s} sent`, scale: 'mbps', color: colorOf(s) }),
        data, overlays, link, height: 170,
      }));
    const pickedPorts = counter === null ? [] : picked.filter((s) => ports.includes(s));
    syncPlot(rdmaSlot, rdmaBox, pickedPorts.length ? `${counter}|${pickedPorts.join()}|${all.join()}` : '',
      alignOnX(pickedPorts.map((p) => rdmaRatePoints(store, p, counter))),
      (data) => telemetryPlot(rdmaBox, {
        axes: [{ scale: 'per_s', label: 'per second', unit: '/s' }],
        series: pickedPorts.map((p) => ({ label: `${p} ${counter}`, scale: 'per_s', color: colorOf(p) })),
        data, overlays, link, height: 170,
      }));

    note.textContent = [
      !picked.length ? 'Tick a source to plot it.' : '',
      traffic.length
        ? 'Goodput: the rate of the bytes each generator sent (solid) and its sink received (dashed), read about once a second while the traffic fault is in force.'
        : `No traffic generators${live ? ' yet' : ''} (no traffic fault in force).`,
      ports.length
        ? 'RDMA: the chosen hw_counter of each ticked port per second, under the kernel\'s name (by default the error counter that grew most).'
        : `No RDMA counters${live ? ' yet' : ''} (no RDMA devices on the hosts).`,
      'A gap: the counter went back or was not read.',
    ].filter(Boolean).join(' ');
  }

  // The plot in `slot` shows `data`: updated when its series are the same (key), else made again;
  // an empty key is no plot.
  function syncPlot(slot, box, key, data, build) {
    if (slot.handle && slot.key === key) {
      slot.handle.update(data, overlays);
      return;
    }
    destroyPlot(slot, box);
    if (!key) return;
    slot.key = key;
    slot.handle = build(data);
  }

  function destroyPlot(slot, box) {
    if (slot.handle) slot.handle.destroy();
    box.replaceChildren();
    slot.key = null;
    slot.handle = null;
  }

  function destroyPlots() {
    destroyPlot(trafficSlot, trafficBox);
    destroyPlot(rdmaSlot, rdmaBox);
  }

  // After a read of the feed: {added, first, live, error} (telemetry_feed.js), null when refused.
  function show(outcome) {
    if (!outcome) return;
    live = outcome.live;
    loaded = true;
    if (outcome.error) {
      const none = outcome.error.status === 404 && !trafficSources(store).length && !rdmaPorts(store).length;
      message.replaceChildren(none ? el('p', { class: 'muted', testid: 'host-telemetry-empty' }, NO_HOST_TELEMETRY)
        : errorBox(outcome.error, 'host-telemetry-error'));
      return;
    }
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
