// A fabric (GET /v1/fabrics/{name}, docs/api.md) drawn as layers in inline SVG: spines on top,
// leaves (or a star fabric's one switch) in the middle, hosts at the bottom, one line per host link
// and per switch link. The layout is a pure function of the fabric document; drawing it only
// builds DOM nodes and reports a click on a link to the caller (no state kept here).

const SVG_NS = 'http://www.w3.org/2000/svg';
const ROW_GAP = 120;     // vertical distance between the rows' centres
const NODE_HEIGHT = 40;
const MARGIN_Y = 16;
const MIN_WIDTH = 520;
const FIT_WIDTH = 1170;  // the drawing's box at a 1280 px wide window; wider drawings scroll
const NODE_GAP = 18;     // least horizontal space between two boxes of a row
const PORT_GAP = 32;     // space between two lines leaving a box, when port names are shown

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'testid') node.setAttribute('data-testid', value);
    else if (key === 'dataset') for (const [k, v] of Object.entries(value)) node.dataset[k] = v;
    else if (key.startsWith('on') && typeof value === 'function') node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? '' : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function labelsText(labels) {
  return Object.entries(labels || {}).map(([k, v]) => `${k}=${v}`).join(' ');
}

// The selector a scenario step uses to target one link (docs/scenarios.md, "Targets").
export function linkSelector(id, side) {
  return `{"link": ${JSON.stringify(id)}${side ? `, "side": ${JSON.stringify(side)}` : ''}}`;
}

// Where each side of a link is, in words: host links have "switch" (default) and "host", switch
// links "switch" (default, the lower-tier end) and "peer".
export function linkSides(link) {
  if (link.kind === 'switch') {
    return [{ side: 'switch', where: `${link.switch} port ${link.port}`, isDefault: true },
      { side: 'peer', where: `${link.peer_switch} port ${link.peer_port}` }];
  }
  return [{ side: 'switch', where: `${link.switch} port ${link.port}`, isDefault: true },
    { side: 'host', where: `${link.host} NIC ${link.nic}` }];
}

// Spines: role=spine, or (without role labels) a switch that is only ever the peer end of a switch
// link. Every other switch is in the middle row.
function isSpine(sw, fabric) {
  const role = (sw.labels || {}).role;
  if (role) return role === 'spine';
  const links = fabric.switch_links || [];
  return links.some((l) => l.peer_switch === sw.name) && !links.some((l) => l.switch === sw.name);
}

export function switchRole(sw, fabric) {
  const role = (sw.labels || {}).role;
  if (role) return role;
  return isSpine(sw, fabric) ? 'spine' : 'switch';
}

// "leaf-spine", "star" (one switch) or "N switches".
export function fabricShape(fabric) {
  const switches = fabric.switches || [];
  if ((fabric.switch_links || []).length) return 'leaf-spine';
  if (switches.length === 1) return 'star';
  return `${switches.length} switches`;
}

// Approximate text widths (px) for the two font sizes used in the nodes.
const nameWidth = (text) => String(text).length * 7.6;
const subWidth = (text) => String(text).length * 6.2;

function hostSubtitle(host) {
  const nics = host.nics || [];
  if (!nics.length) return host.netns || '';
  return nics.length === 1 ? nics[0].address || nics[0].name : `${nics.length} NICs`;
}

// Positions of every node and the end points of every link. Rows are spread over the full width,
// so a regular fabric (2 leaves over 4 hosts) puts each leaf above its hosts. Hosts are ordered by
// the mean position of the switches they are cabled to, which keeps their lines from crossing.
// A node's lines leave it side by side, ordered like their other ends, so that port names do not
// overlap. Drawings wider than FIT_WIDTH first lose the nodes' second lines, then the port names.
export function layoutFabric(fabric) {
  const switches = fabric.switches || [];
  const hosts = fabric.hosts || [];
  const spines = switches.filter((s) => isSpine(s, fabric));
  const middle = switches.filter((s) => !isSpine(s, fabric));
  const middleIndex = new Map(middle.map((s, i) => [s.name, i]));
  const weight = (host) => {
    const idx = (fabric.links || []).filter((l) => l.host === host.name && middleIndex.has(l.switch))
      .map((l) => middleIndex.get(l.switch));
    return idx.length ? idx.reduce((a, b) => a + b, 0) / idx.length : Infinity;
  };
  const orderedHosts = hosts.map((h, i) => ({ h, i, w: weight(h) }))
    .sort((a, b) => (a.w === b.w ? a.i - b.i : a.w - b.w)).map((x) => x.h);

  const switchNode = (s) => ({ kind: 'switch', role: switchRole(s, fabric), name: s.name, sub: s.netns || '', data: s, top: [], bottom: [] });
  const rows = [spines.map(switchNode), middle.map(switchNode),
    orderedHosts.map((h) => ({ kind: 'host', role: 'host', name: h.name, sub: hostSubtitle(h), data: h, top: [], bottom: [] }))]
    .filter((r) => r.length);
  rows.forEach((row, r) => row.forEach((n) => { n.row = r; }));
  const nodes = rows.flat();
  const bySwitch = new Map(nodes.filter((n) => n.kind === 'switch').map((n) => [n.name, n]));
  const byHost = new Map(nodes.filter((n) => n.kind === 'host').map((n) => [n.name, n]));

  const links = [];
  for (const l of fabric.switch_links || []) {
    const a = bySwitch.get(l.switch);
    const b = bySwitch.get(l.peer_switch);
    if (!a || !b) continue;
    // The upper end is the spine whichever way round the link is written.
    const [upper, lower, upperPort, lowerPort] = a.row < b.row ? [a, b, l.port, l.peer_port] : [b, a, l.peer_port, l.port];
    links.push({ kind: 'switch', id: l.id, data: { ...l, kind: 'switch' }, upper, lower, upperPort, lowerPort });
  }
  for (const l of fabric.links || []) {
    const upper = bySwitch.get(l.switch);
    const lower = byHost.get(l.host);
    if (!upper || !lower) continue;
    links.push({ kind: 'host', id: l.id, data: { ...l, kind: 'host' }, upper, lower, upperPort: l.port, lowerPort: l.nic });
  }
  for (const link of links) { link.upper.bottom.push(link); link.lower.top.push(link); }

  const edges = (n) => Math.max(n.top.length, n.bottom.length);
  const measure = (showSub, portLabels) => {
    for (const n of nodes) {
      const text = showSub ? Math.max(nameWidth(n.name), subWidth(n.sub)) : nameWidth(n.name);
      n.width = Math.max(showSub ? 56 : 40, Math.ceil(text + 18), portLabels ? edges(n) * PORT_GAP + 8 : 0);
    }
    return Math.max(MIN_WIDTH, ...rows.map((row) => row.length * (Math.max(...row.map((n) => n.width)) + NODE_GAP)));
  };
  let style = [[true, true], [false, true], [false, false]].find(([sub, ports]) => measure(sub, ports) <= FIT_WIDTH);
  if (!style) style = [false, false];
  const [showSub, portLabels] = style;
  const width = measure(showSub, portLabels);
  rows.forEach((row, r) => row.forEach((n, i) => {
    n.x = (width * (i + 0.5)) / row.length;
    n.y = MARGIN_Y + NODE_HEIGHT / 2 + r * ROW_GAP;
  }));
  const height = MARGIN_Y * 2 + NODE_HEIGHT + (rows.length - 1) * ROW_GAP;

  // Where each line meets each node's edge.
  const spread = (n, edge, other, key) => {
    const list = n[edge].map((link, i) => ({ link, i })).sort((a, b) => (other(a.link).x - other(b.link).x) || (a.i - b.i));
    const k = list.length;
    const step = k > 1 ? Math.min(portLabels ? PORT_GAP : 8, (n.width - 12) / (k - 1)) : 0;
    list.forEach(({ link }, i) => { link[key] = n.x + (i - (k - 1) / 2) * step; });
  };
  for (const n of nodes) {
    spread(n, 'bottom', (link) => link.lower, 'x1');
    spread(n, 'top', (link) => link.upper, 'x2');
  }
  for (const link of links) {
    link.y1 = link.upper.y + NODE_HEIGHT / 2;
    link.y2 = link.lower.y - NODE_HEIGHT / 2;
  }
  return { width, height, nodes, links, showSub, portLabels };
}

function nodeTitle(n) {
  const d = n.data;
  const lines = [];
  if (n.kind === 'switch') {
    lines.push(`switch ${d.name} (${n.role})`, `netns ${d.netns || '–'}${d.bridge ? `, bridge ${d.bridge}` : ''}`,
      `ports ${(d.ports || []).join(' ') || '–'}`);
  } else {
    lines.push(`host ${d.name}`, `netns ${d.netns || '–'}`);
    for (const nic of d.nics || []) lines.push(`${nic.name} ${nic.address || ''}`.trim());
  }
  const labels = labelsText(d.labels);
  if (labels) lines.push(`labels ${labels}`);
  return lines.join('\n');
}

function linkTitle(link) {
  const d = link.data;
  const lines = link.kind === 'switch'
    ? [`switch link ${d.id}: ${d.switch} ${d.port} ↔ ${d.peer_switch} ${d.peer_port}`]
    : [`host link ${d.id}: ${d.host} ${d.nic} ↔ ${d.switch} ${d.port}`];
  const labels = labelsText(d.labels);
  if (labels) lines.push(`labels ${labels}`);
  lines.push(`select ${linkSelector(d.id)}`);
  return lines.join('\n');
}

// A port or NIC name where a line meets a box: just below the upper box's bottom edge, or just
// above the lower box's top edge (the white halo in style.css keeps it legible over the line).
function endLabel(link, atUpper, text) {
  return atUpper
    ? svg('text', { class: 'topo-port upper', x: link.x1, y: link.y1 + 12, 'text-anchor': 'middle' }, text)
    : svg('text', { class: 'topo-port lower', x: link.x2, y: link.y2 - 4, 'text-anchor': 'middle' }, text);
}

// The drawing. onSelect(linkData) is called when a link is clicked or activated from the keyboard.
export function drawFabric(fabric, { onSelect } = {}) {
  const layout = layoutFabric(fabric);
  const { portLabels, showSub } = layout;
  const linkGroups = layout.links.map((link) => {
    const activate = () => onSelect && onSelect(link.data);
    return svg('g', {
      class: `topo-link topo-link-${link.kind}`, testid: 'topology-link', tabindex: 0, role: 'button',
      'aria-label': `${link.kind === 'switch' ? 'switch link' : 'host link'} ${link.id}`,
      dataset: { linkId: link.id, linkKind: link.kind },
      onclick: activate,
      onkeydown: (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); activate(); } },
    },
    svg('title', {}, linkTitle(link)),
    svg('line', { class: 'topo-hit', x1: link.x1, y1: link.y1, x2: link.x2, y2: link.y2 }),
    svg('line', { class: 'topo-line', x1: link.x1, y1: link.y1, x2: link.x2, y2: link.y2 }),
    portLabels ? endLabel(link, true, link.upperPort) : null,
    portLabels ? endLabel(link, false, link.lowerPort) : null);
  });
  const nodeGroups = layout.nodes.map((n) => svg('g', {
    class: `topo-node topo-${n.role}`, testid: 'topology-node',
    dataset: { name: n.name, nodeKind: n.kind, role: n.role },
    transform: `translate(${n.x - n.width / 2} ${n.y - NODE_HEIGHT / 2})`,
  },
  svg('title', {}, nodeTitle(n)),
  svg('rect', { width: n.width, height: NODE_HEIGHT, rx: 6, ry: 6 }),
  svg('text', { class: 'topo-name', x: n.width / 2, y: showSub ? 17 : 25, 'text-anchor': 'middle' }, n.name),
  showSub ? svg('text', { class: 'topo-sub', x: n.width / 2, y: 31, 'text-anchor': 'middle' }, n.sub) : null));

  const counts = `${(fabric.switches || []).length} switches, ${(fabric.hosts || []).length} hosts, ` +
    `${(fabric.links || []).length} host links, ${(fabric.switch_links || []).length} switch links`;
  return svg('svg', {
    class: 'topology-svg', testid: 'topology-svg', role: 'group', xmlns: SVG_NS,
    width: layout.width, height: layout.height, viewBox: `0 0 ${layout.width} ${layout.height}`,
    'aria-label': `Topology of fabric ${fabric.name}: ${counts}`,
  },
  svg('title', {}, `Fabric ${fabric.name}: ${counts}`),
  svg('g', { class: 'topo-links' }, linkGroups),
  svg('g', { class: 'topo-nodes' }, nodeGroups));
}
