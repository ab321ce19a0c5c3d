// #/scenarios and #/scenarios/NAME: the scenario library, a run launcher with the fabric chosen
// from GET /v1/fabrics, and a JSON editor whose validation errors (POST /v1/scenarios/validate)
// are shown next to it as the user types.
import { ApiError, canOperate, get, post, put, whoami } from '../api.js';
import { debounce, el, errorBox, fmtNumber, fmtTime, stateBadge } from '../util.js';
import { kindReference } from './kind_reference.js';

const TEMPLATE = {
  version: 1,
  name: 'my-scenario',
  description: 'What this scenario shows',
  workload: { transport: 'tcp', message_bytes: 262144, compute_ms: 5 },
  baseline_ms: 3000,
  steps: [{ kind: 'link_flap', target: { host: 'h1', side: 'switch' }, at_ms: 0, params: { down_ms: 1000 } }],
  recovery_ms: 5000,
  gates: { min_score: 20 },
};

async function fabricSelect() {
  const body = await get('/v1/fabrics').catch(() => ({ fabrics: [] }));
  const select = el('select', { testid: 'fabric-select' });
  for (const f of body.fabrics || []) select.append(el('option', { value: f.name }, f.name));
  if (!select.options.length) select.append(el('option', { value: '' }, 'no fabric registered'));
  return select;
}

// The editor: a textarea, a validation line kept current while typing, and Save.
function editor({ initial, fabric, canSave, onSaved }) {
  const area = el('textarea', { class: 'editor', spellcheck: 'false', testid: 'scenario-editor', rows: 24 });
  area.value = JSON.stringify(initial, null, 2);
  const verdict = el('div', { class: 'validation', testid: 'validation-result', 'aria-live': 'polite' });
  const saveButton = el('button', { testid: 'save-scenario', disabled: !canSave }, 'Save');
  const saveMessage = el('span', { class: 'muted', testid: 'save-message' });
  let valid = false;

  const showError = (message) => {
    valid = false;
    verdict.className = 'validation invalid';
    verdict.replaceChildren(el('span', { testid: 'validation-error' }, message));
  };
  async function validate() {
    let doc;
    try {
      doc = JSON.parse(area.value);
    } catch (e) {
      showError(`JSON: ${e.message}`);
      return null;
    }
    try {
      const body = { scenario: doc };
      if (fabric && fabric.value) body.fabric = fabric.value;
      await post('/v1/scenarios/validate', body);
      valid = true;
      verdict.className = 'validation valid';
      verdict.replaceChildren(el('span', { testid: 'validation-ok' }, `✔ valid${fabric && fabric.value ? ` for ${fabric.value}` : ''}`));
      return doc;
    } catch (e) {
      if (e.status === 401) return null;
      showError(`${e.code}: ${e.message}`);
      return null;
    }
  }
  const later = debounce(validate, 400);
  area.addEventListener('input', () => { saveMessage.textContent = ''; later(); });
  if (fabric) fabric.addEventListener('change', validate);
  saveButton.addEventListener('click', async () => {
    const doc = await validate();
    if (!doc || !valid) return;
    if (!doc.name) { showError('name: required to save'); return; }
    try {
      await put(`/v1/scenarios/${encodeURIComponent(doc.name)}`, doc);
      saveMessage.textContent = `saved as ${doc.name}`;
      if (onSaved) onSaved(doc.name);
    } catch (e) {
      if (e instanceof ApiError && e.status !== 401) showError(`${e.code}: ${e.message}`);
    }
  });
  validate();
  return el('div', { class: 'editor-grid' },
    el('div', {}, area, el('div', { class: 'toolbar' }, saveButton, saveMessage)),
    el('div', {}, el('h3', {}, 'Validation'), verdict,
      el('p', { class: 'muted small' }, 'Checked against the chosen fabric as you type. Format: docs/scenarios.md.'),
      kindReference()));
}

export async function scenariosView(ctx) {
  const page = el('section', { testid: 'scenarios-page' });
  ctx.root.append(page);
  const [body, who] = await Promise.all([get('/v1/scenarios'), whoami()]);
  const rows = (body.scenarios || []).map((s) => el('tr', { testid: 'scenario-row', dataset: { name: s.name } },
    el('td', {}, el('a', { href: `#/scenarios/${encodeURIComponent(s.name)}`, testid: 'scenario-link' }, s.name)),
    el('td', {}, s.description), el('td', { class: 'num' }, s.steps),
    el('td', {}, s.builtin ? 'built-in' : fmtTime(s.updated_ms))));
  page.append(el('h1', {}, 'Scenarios'),
    el('table', { class: 'scenarios', testid: 'scenarios-table' },
      el('thead', {}, el('tr', {}, ['name', 'description', 'steps', 'updated'].map((h) => el('th', {}, h)))),
      el('tbody', {}, rows)));
  if (canOperate(who)) {
    const slot = el('div');
    const newButton = el('button', { testid: 'new-scenario', onclick: async () => {
      newButton.hidden = true;
      const fabric = await fabricSelect();
      slot.append(el('h2', {}, 'New scenario'), el('div', { class: 'toolbar' }, 'Validate against ', fabric),
        editor({ initial: TEMPLATE, fabric, canSave: true, onSaved: (name) => { location.hash = `#/scenarios/${encodeURIComponent(name)}`; } }));
    } }, 'New scenario');
    page.append(el('div', { class: 'toolbar' }, newButton), slot);
  }
  return null;
}

export async function scenarioView(ctx, name) {
  const page = el('section', { testid: 'scenario-page' });
  ctx.root.append(page);
  const [doc, who, fabric, runs] = await Promise.all([
    get(`/v1/scenarios/${encodeURIComponent(name)}`), whoami(), fabricSelect(),
    get(`/v1/runs?scenario=${encodeURIComponent(name)}&limit=10`).catch(() => ({ runs: [] })),
  ]);
  if (doc.fabric && [...fabric.options].some((o) => o.value === doc.fabric)) fabric.value = doc.fabric;
  const message = el('div');
  const launch = el('div', { class: 'toolbar launch' }, 'Fabric ', fabric);
  if (canOperate(who)) {
    const start = el('button', { class: 'primary', testid: 'start-run-button', onclick: async () => {
      start.disabled = true;
      try {
        const body = { scenario: name };
        if (fabric.value) body.fabric = fabric.value;
        const created = await post('/v1/runs', body);
        location.hash = `#/runs/${created.id}`;
      } catch (e) {
        start.disabled = false;
        if (e.status !== 401) message.replaceChildren(errorBox(e, 'start-error'));
      }
    } }, 'Start run');
    launch.append(start);
  }
  launch.append(el('a', { class: 'button-link', href: `#/compare?scenario=${encodeURIComponent(name)}` }, 'Score history'));

  const recent = (runs.runs || []).map((r) => el('tr', {},
    el('td', {}, el('a', { href: `#/runs/${r.id}` }, `#${r.id}`)), el('td', {}, r.fabric),
    el('td', {}, stateBadge(r.state)), el('td', { class: 'num' }, fmtNumber(r.score)), el('td', {}, fmtTime(r.started_ms || r.created_ms))));

  page.append(el('h1', {}, `Scenario ${name}`),
    doc.description ? el('p', {}, doc.description) : null,
    launch, message,
    el('div', { class: 'columns' },
      el('div', {}, el('h2', {}, 'Document'), el('pre', { class: 'json', testid: 'scenario-json' }, JSON.stringify(doc, null, 2))),
      el('div', {}, el('h2', {}, 'Recent runs'),
        recent.length ? el('table', { class: 'runs' }, el('thead', {}, el('tr', {}, ['id', 'fabric', 'state', 'score', 'started'].map((h) => el('th', {}, h)))), el('tbody', {}, recent))
          : el('p', { class: 'muted' }, 'Never run.'))));

  if (canOperate(who)) {
    const builtin = (await get('/v1/scenarios').catch(() => ({ scenarios: [] }))).scenarios
      ?.some((s) => s.name === name && s.builtin);
    const initial = builtin ? { ...doc, name: `${name}-copy` } : doc;
    page.append(el('h2', {}, builtin ? 'Edit a copy (built-in scenarios are read-only)' : 'Edit'),
      editor({ initial, fabric, canSave: true, onSaved: (saved) => {
        if (saved !== name) location.hash = `#/scenarios/${encodeURIComponent(saved)}`;
        else get(`/v1/scenarios/${encodeURIComponent(name)}`).then((d) => {
          page.querySelector('[data-testid="scenario-json"]').textContent = JSON.stringify(d, null, 2);
        }).catch(() => {});
      } }));
  }
  return null;
}
