// #/fabrics and #/fabrics/NAME: the registered fabrics (GET /v1/fabrics, cheap: no agent asked),
// and one fabric's topology (GET /v1/fabrics/NAME, which also asks each host's agent about itself):
// a layered drawing, then its switches, hosts, host links and switch links as tables. Every link
// shows the selector that targets it, to copy into a scenario step (docs/scenarios.md, "Targets").
import { get } from '../api.js';
import { el, fmtNumber } from '../util.js';
import { drawFabric, fabricShape, labelsText, linkSelector, linkSides, switchRole } from '../topology.js';

const fabricHref = (name) => `#/fabrics/${encodeURIComponent(name)}`;

function labelChips(labels, testid) {
  const entries = Object.entries(labels || {});
  if (!entries.length) return el('span', { class: 'muted', testid }, '–');
  return el('span', { class: 'chips', testid }, entries.map(([k, v]) => el('span', { class: 'chip' }, `${k}=${v}`)));
}

export async function fabricsView(ctx) {
  const page = el('section', { class: 'fabrics-page', testid: 'fabrics-page' });
  ctx.root.append(page);
  const body = await get('/v1/fabrics');
  const fabrics = body.fabrics || [];
  const columns = [['name'], ['kind'], ['topology'], ['hosts', 'num'], ['switches', 'num'], ['host links', 'num'],
    ['switch links', 'num']];
  const rows = fabrics.map((f) => el('tr', { testid: 'fabric-row', dataset: { name: f.name } },
    el('td', {}, el('a', { href: fabricHref(f.name), testid: 'fabric-link' }, f.name)),
    el('td', { testid: 'fabric-row-kind' }, f.kind || '–'),
    el('td', { testid: 'fabric-row-shape' }, fabricShape(f)),
    el('td', { class: 'num', testid: 'fabric-row-hosts' }, (f.hosts || []).length),
    el('td', { class: 'num', testid: 'fabric-row-switches' }, (f.switches || []).length),
    el('td', { class: 'num', testid: 'fabric-row-links' }, (f.links || []).length),
    el('td', { class: 'num', testid: 'fabric-row-switch-links' }, (f.switch_links || []).length)));
  if (!rows.length) {
    rows.push(el('tr', { testid: 'fabrics-empty' }, el('td', { colspan: columns.length, class: 'muted' },
      'No fabric registered. `fabric-chaos lab up` (or `serve --with-lab N`) registers the namespace lab.')));
  }
  page.append(el('h1', {}, 'Fabrics'),
    el('p', { class: 'muted' }, 'The fabrics scenarios run on, as registered with serve. Open one for its topology ' +
      'and the selectors that target its links.'),
    el('table', { class: 'fabrics', testid: 'fabrics-table' },
      el('thead', {}, el('tr', {}, columns.map(([h, cls]) => el('th', { class: cls }, h)))),
      el('tbody', {}, rows)));
  return null;
}

function agentCell(agent) {
  const cell = el('td', { testid: 'host-agent' });
  if (!agent || typeof agent !== 'object') {
    cell.append(agent || '–');  // the list's form: the agent's name only
    return cell;
  }
  if (!agent.reachable) {
    cell.append(el('span', { class: 'mono' }, agent.name), ' ',
      el('span', { class: 'badge agent-down', testid: 'host-agent-state' }, 'unreachable'),
      el('div', { class: 'small fail-text' }, agent.error || ''));
    return cell;
  }
  const kinds = agent.kinds || [];
  const available = kinds.filter((k) => k.available);
  const missing = kinds.filter((k) => !k.available).map((k) => `${k.kind}: ${k.reason || 'not available'}`);
  const offset = agent.clock_offset_ms === undefined ? '' :
    `, clock offset ${fmtNumber(agent.clock_offset_ms, 1)} ms (±${fmtNumber((agent.round_trip_ms || 0) / 2, 1)})`;
  cell.append(el('span', { class: 'mono' }, agent.name), ' ',
    el('span', { class: 'badge agent-up', testid: 'host-agent-state' }, 'reachable'),
    el('div', { class: 'small muted' }, `${agent.version ? `v${agent.version}` : ''}` +
      `${agent.hostname ? ` on ${agent.hostname}` : ''}${offset}`),
    el('div', { class: 'small muted', title: missing.length ? `not available:\n${missing.join('\n')}` : 'all kinds available' },
      `${available.length}/${kinds.length} fault kinds available`));
  return cell;
}

// The selectors of one link, one per side, each with a copy button.
function selectorList(link) {
  return el('ul', { class: 'selectors' }, linkSides(link).map(({ side, where, isDefault }) => {
    const text = linkSelector(link.id, isDefault ? undefined : side);
    const code = el('code', { class: 'selector', testid: 'selection-selector', dataset: { side } }, text);
    const note = el('span', { class: 'muted small' });
    const copy = el('button', { class: 'small-button', 'aria-label': `copy ${text}`, onclick: async () => {
      try {
        await navigator.clipboard.writeText(text);
        note.textContent = 'copied';
      } catch {
        // No clipboard outside a secure context: select the text for Ctrl+C instead.
        const range = document.createRange();
        range.selectNodeContents(code);
        getSelection().removeAllRanges();
        getSelection().addRange(range);
        note.textContent = 'selected: press Ctrl+C';
      }
    } }, 'copy');
    return el('li', {}, code, ' ', copy, ' ', el('span', { class: 'small' }, `side "${side}"${isDefault ? ' (default)' : ''}: at ${where}`), ' ', note);
  }));
}

export async function fabricView(ctx, name) {
  const page = el('section', { class: 'fabric-page', testid: 'fabric-page' });
  ctx.root.append(page);
  const fabric = await get(`/v1/fabrics/${encodeURIComponent(name)}`);
  if (!ctx.isCurrent()) return null;
  const switches = fabric.switches || [];
  const hosts = fabric.hosts || [];
  const links = (fabric.links || []).map((l) => ({ ...l, kind: 'host' }));
  const switchLinks = (fabric.switch_links || []).map((l) => ({ ...l, kind: 'switch' }));

  // One link selected at a time: its line and its table row highlighted, its selectors shown.
  const selection = el('div', { class: 'link-selection', testid: 'link-selection', 'aria-live': 'polite' });
  const rowsById = new Map();
  let drawing = null;
  function select(link) {
    for (const node of page.querySelectorAll('.selected')) node.classList.remove('selected');
    const row = rowsById.get(`${link.kind}:${link.id}`);
    if (row) row.classList.add('selected');
    const line = [...drawing.querySelectorAll('[data-testid="topology-link"]')]
      .find((g) => g.dataset.linkId === link.id && g.dataset.linkKind === link.kind);
    if (line) line.classList.add('selected');
    const ends = link.kind === 'switch'
      ? `${link.switch} ${link.port} ↔ ${link.peer_switch} ${link.peer_port}`
      : `${link.host} ${link.nic} ↔ ${link.switch} ${link.port}`;
    selection.dataset.linkId = link.id;
    selection.replaceChildren(
      el('div', {}, el('strong', {}, `${link.kind === 'switch' ? 'Switch link' : 'Host link'} ${link.id}`), ` · ${ends}`,
        labelsText(link.labels) ? el('span', { class: 'muted' }, ` · ${labelsText(link.labels)}`) : null),
      el('div', { class: 'small muted' }, 'Target it in a scenario step with:'), selectorList(link));
  }
  selection.append(el('span', { class: 'muted' },
    'Click a line (or a link\'s id in the tables below) for the selector that targets it.'));

  drawing = drawFabric(fabric, { onSelect: select });
  const agents = hosts.map((h) => h.agent).filter((a) => a && typeof a === 'object');
  const reachable = agents.filter((a) => a.reachable).length;
  const meta = el('dl', { class: 'meta', testid: 'fabric-summary' },
    el('dt', {}, 'kind'), el('dd', { testid: 'fabric-kind' }, fabric.kind || '–'),
    el('dt', {}, 'topology'), el('dd', { testid: 'fabric-shape' }, fabricShape(fabric)),
    el('dt', {}, 'switches'), el('dd', {}, switches.length),
    el('dt', {}, 'hosts'), el('dd', {}, hosts.length),
    el('dt', {}, 'host links'), el('dd', {}, links.length),
    el('dt', {}, 'switch links'), el('dd', {}, switchLinks.length),
    agents.length ? [el('dt', {}, 'agents'), el('dd', { testid: 'fabric-agents' }, `${reachable}/${agents.length} hosts' agents reachable`)] : null);

  const idButton = (link) => el('button', { class: 'link mono', testid: 'link-id', onclick: () => select(link) }, link.id);
  const selectorCell = (link) => el('td', {}, el('code', { class: 'selector', testid: 'link-selector' }, linkSelector(link.id)));
  const table = (cls, testid, headers, rows) => el('table', { class: `fabric-table ${cls}`, testid },
    el('thead', {}, el('tr', {}, headers.map((h) => el('th', {}, h)))), el('tbody', {}, rows));

  const switchRows = switches.map((s) => el('tr', { testid: 'switch-row', dataset: { name: s.name } },
    el('td', { class: 'mono' }, s.name),
    el('td', { testid: 'switch-role' }, el('span', { class: `badge swrole-${switchRole(s, fabric)}` }, switchRole(s, fabric))),
    el('td', { class: 'mono' }, s.netns || '–'), el('td', { class: 'mono' }, s.bridge || '–'),
    el('td', { class: 'mono small', testid: 'switch-ports' }, (s.ports || []).join(' ') || '–'),
    el('td', {}, labelChips(s.labels, 'switch-labels'))));
  const hostRows = hosts.map((h) => el('tr', { testid: 'host-row', dataset: { name: h.name } },
    el('td', { class: 'mono' }, h.name), el('td', { class: 'mono' }, h.netns || '–'),
    el('td', { class: 'mono small', testid: 'host-nics' },
      (h.nics || []).length ? h.nics.map((n) => el('div', {}, `${n.name} ${n.address || ''}`)) : '–'),
    el('td', {}, labelChips(h.labels, 'host-labels')), agentCell(h.agent)));
  const linkRows = links.map((l) => {
    const row = el('tr', { testid: 'link-row', dataset: { linkId: l.id } },
      el('td', {}, idButton(l)), el('td', { class: 'mono' }, `${l.host} ${l.nic}`),
      el('td', { class: 'mono' }, `${l.switch} ${l.port}`), el('td', {}, labelChips(l.labels, 'link-labels')), selectorCell(l));
    rowsById.set(`host:${l.id}`, row);
    return row;
  });
  const switchLinkRows = switchLinks.map((l) => {
    const row = el('tr', { testid: 'switch-link-row', dataset: { linkId: l.id } },
      el('td', {}, idButton(l)), el('td', { class: 'mono' }, `${l.switch} ${l.port}`),
      el('td', { class: 'mono' }, `${l.peer_switch} ${l.peer_port}`), el('td', {}, labelChips(l.labels, 'link-labels')),
      selectorCell(l));
    rowsById.set(`switch:${l.id}`, row);
    return row;
  });

  page.append(
    el('div', { class: 'crumbs' }, el('a', { href: '#/fabrics' }, '← all fabrics')),
    el('h1', {}, `Fabric ${fabric.name}`), meta,
    el('h2', {}, 'Topology'),
    el('p', { class: 'muted small' }, 'Spines on top, leaves (or the switch) in the middle, hosts at the bottom; ' +
      'port names at the switch end of each line, NIC names at the host end. Hover a box or a line for ' +
      'its namespace, ports and labels.'),
    el('div', { class: 'topology', testid: 'topology' }, drawing),
    selection,
    el('h2', {}, `Switches (${switches.length})`),
    table('switches', 'switches-table', ['name', 'role', 'netns', 'bridge', 'ports', 'labels'], switchRows),
    el('h2', {}, `Hosts (${hosts.length})`),
    table('hosts', 'hosts-table', ['name', 'netns', 'NICs', 'labels', 'agent'], hostRows),
    el('h2', {}, `Host links (${links.length})`),
    table('links', 'links-table', ['id', 'host NIC', 'switch port', 'labels', 'selector'], linkRows),
    ...(switchLinks.length ? [el('h2', {}, `Switch links (${switchLinks.length})`),
      table('switch-links', 'switch-links-table', ['id', 'switch port', 'peer switch port', 'labels', 'selector'], switchLinkRows)]
      : []),
    el('p', { class: 'muted small', testid: 'selector-help' }, selectorHelp(fabric)));
  return null;
}

// How sides and labels work, with an example from this fabric's own labels.
function selectorHelp(fabric) {
  const uplink = (fabric.switch_links || []).find((l) => (l.labels || {}).tier && (l.labels || {}).leaf);
  const host = (fabric.hosts || []).find((h) => Object.keys(h.labels || {}).length);
  let example = '';
  if (uplink) {
    example = ` Labels select many links at once: {"labels": {"tier": "${uplink.labels.tier}", "leaf": "${uplink.labels.leaf}"}} ` +
      `is every uplink of ${uplink.labels.leaf}.`;
  } else if (host) {
    const [k, v] = host.labels.rack ? ['rack', host.labels.rack] : Object.entries(host.labels)[0];
    example = ` Labels select many links at once: {"labels": {"${k}": "${v}"}} is every link of the hosts labelled ${k}=${v}.`;
  }
  const peer = (fabric.switch_links || []).length ? ' (the leaf end of a switch link; "side": "peer" is the spine end)' : '';
  return `A selector without "side" acts at the switch end${peer}; "side": "host" at the host's NIC.${example} ` +
    'See docs/scenarios.md, "Targets".';
}
