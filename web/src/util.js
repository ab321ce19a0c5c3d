// DOM and formatting helpers shared by the views. Pure functions, no state.

// el('div', {class: 'x', dataset: {testid: 'y'}, onclick: f}, child, 'text', ...)
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'dataset') Object.assign(node.dataset, value);
    else if (key === 'testid') node.dataset.testid = value;
    else if (key.startsWith('on') && typeof value === 'function') node.addEventListener(key.slice(2), value);
    else if (key === 'value') node.value = value;
    else if (value === true) node.setAttribute(key, '');
    else node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export const FINAL_STATES = new Set(['passed', 'failed', 'aborted', 'interrupted', 'error']);
export const ALL_STATES = ['queued', 'preparing', 'baseline', 'injecting', 'recovering', 'analysing',
  'passed', 'failed', 'aborted', 'interrupted', 'error'];

export function isFinal(state) { return FINAL_STATES.has(state); }

export function stateBadge(state, testid) {
  return el('span', { class: `badge state-${state}`, testid }, state);
}

export function fmtNumber(value, digits = 1) {
  if (value === null || value === undefined || Number.isNaN(value)) return '–';
  return Number(value).toFixed(digits);
}

export function fmtMs(ms) {
  if (ms === null || ms === undefined) return '–';
  if (Math.abs(ms) < 1000) return `${Math.round(ms)} ms`;
  if (Math.abs(ms) < 120000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

// How long ago, for people: "8 s", "4 min 12 s", "3 h 5 min", "2 d 4 h" (two units at most).
export function fmtAge(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return '–';
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s`;
  const [m, h, d] = [Math.floor(s / 60), Math.floor(s / 3600), Math.floor(s / 86400)];
  if (m < 60) return `${m} min ${s % 60} s`;
  if (h < 24) return `${h} h ${m % 60} min`;
  return `${d} d ${h % 24} h`;
}

export function fmtTime(wallMs) {
  if (!wallMs) return '–';
  const d = new Date(wallMs);
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function fmtPercent(fraction) {
  if (fraction === null || fraction === undefined) return '–';
  return `${(fraction * 100).toFixed(1)} %`;
}

// "#/runs/12?x=1" -> {parts: ['runs', '12'], query: URLSearchParams}
export function parseHash(hash) {
  const raw = (hash || '').replace(/^#\/?/, '');
  const [path, search = ''] = raw.split('?');
  return { parts: path.split('/').filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(search) };
}

export function debounce(fn, ms) {
  let timer = null;
  return (...args) => { clearTimeout(timer); timer = setTimeout(() => fn(...args), ms); };
}

// A message box for errors shown in place of (or above) a view's content.
export function errorBox(error, testid = 'error') {
  const text = error && error.message ? error.message : String(error);
  return el('div', { class: 'error-box', testid, role: 'alert' }, text);
}
