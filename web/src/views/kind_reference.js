// The fault kinds beside the scenario editor, drawn from each kind's declaration in
// GET /v1/capabilities (fault_kinds[].schema): parameters with type, unit, range, default and
// doc, the phase shape and how overlapping faults compose. Nothing here is hand-written per kind.
import { get } from '../api.js';
import { el } from '../util.js';

function range(param) {
  const has = (v) => v !== undefined && v !== null;
  if (!has(param.min) && !has(param.max)) return '';
  if (has(param.min) && param.min_exclusive) return `(${param.min}, ${has(param.max) ? `${param.max}]` : '∞)'}`;
  if (has(param.min) && has(param.max)) return `${param.min}..${param.max}`;
  return has(param.min) ? `≥ ${param.min}` : `≤ ${param.max}`;
}

function typeOf(param) {
  return param.type === 'choice' ? (param.choices || []).join(' | ') : param.type;
}

function phases(schema) {
  const p = schema.phases || {};
  return p.shape === 'repeated'
    ? `${p.count} windows of ${p.on}, ${p.off} apart`
    : 'one window of duration_ms';
}

function kindCard(kind) {
  const schema = kind.schema;
  const status = kind.available ? `available (${kind.backend})` : `unavailable: ${kind.reason}`;
  const card = el('details', { class: 'kind', testid: 'kind-reference-kind', dataset: { kind: kind.kind } },
    el('summary', {}, el('code', {}, kind.kind), ' ', el('span', { class: 'muted small' }, status)));
  if (!schema) return card;
  card.append(el('p', { class: 'small' }, schema.summary),
    el('p', { class: 'muted small' }, `acts on: ${schema.target}; phases: ${phases(schema)}; overlapping faults: ${schema.composition}; ${schema.lifecycle}`),
    el('table', { class: 'params small' },
      el('thead', {}, el('tr', {}, ['param', 'type', 'unit', 'range', 'default', ''].map((h) => el('th', {}, h)))),
      el('tbody', {}, (schema.params || []).map((p) => el('tr', { testid: 'kind-param', dataset: { param: p.name } },
        el('td', {}, el('code', {}, p.name)), el('td', {}, typeOf(p)), el('td', {}, p.unit || ''),
        el('td', { testid: 'kind-param-range' }, range(p)),
        el('td', {}, p.required ? 'required' : (p.default !== undefined ? JSON.stringify(p.default) : '')),
        el('td', { class: 'muted' }, p.doc))))));
  return card;
}

// A panel that fills itself once capabilities arrive; an error leaves a one-line note.
export function kindReference() {
  const panel = el('div', { class: 'kind-reference', testid: 'kind-reference' }, el('h3', {}, 'Fault kinds'));
  get('/v1/capabilities')
    .then((body) => panel.append(...(body.fault_kinds || []).map(kindCard)))
    .catch(() => panel.append(el('p', { class: 'muted small' }, 'capabilities unavailable')));
  return panel;
}
