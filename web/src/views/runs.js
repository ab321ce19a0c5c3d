// #/runs: the runs list with filters (scenario, state, fabric), refreshed every few seconds. Two
// ticked runs open the compare view.
import { get } from '../api.js';
import { ALL_STATES, el, errorBox, fmtMs, fmtNumber, fmtTime, isFinal, stateBadge } from '../util.js';

const REFRESH_MS = 3000;

export async function runsView(ctx) {
  const { query } = ctx;
  const page = el('section', { class: 'runs-page', testid: 'runs-page' });
  ctx.root.append(page);

  const scenarioSelect = el('select', { testid: 'filter-scenario' }, el('option', { value: '' }, 'any scenario'));
  const stateSelect = el('select', { testid: 'filter-state' }, el('option', { value: '' }, 'any state'),
    ALL_STATES.map((s) => el('option', { value: s }, s)));
  const fabricSelect = el('select', { testid: 'filter-fabric' }, el('option', { value: '' }, 'any fabric'));
  const compareButton = el('button', { testid: 'compare-selected', disabled: true }, 'Compare 2 selected');
  const status = el('span', { class: 'muted', testid: 'runs-updated' });
  const tbody = el('tbody');
  const table = el('table', { class: 'runs', testid: 'runs-table' },
    el('thead', {}, el('tr', {}, ['', 'id', 'scenario', 'fabric', 'state', 'score', 'started', 'duration'].map((h) => el('th', {}, h)))),
    tbody);
  const errorSlot = el('div');
  page.append(el('h1', {}, 'Runs'),
    el('div', { class: 'toolbar' }, scenarioSelect, stateSelect, fabricSelect, compareButton, status),
    errorSlot, table);

  const [scenarios, fabrics] = await Promise.all([
    get('/v1/scenarios').catch(() => ({ scenarios: [] })),
    get('/v1/fabrics').catch(() => ({ fabrics: [] })),
  ]);
  for (const s of scenarios.scenarios || []) scenarioSelect.append(el('option', { value: s.name }, s.name));
  for (const f of fabrics.fabrics || []) fabricSelect.append(el('option', { value: f.name }, f.name));
  scenarioSelect.value = query.get('scenario') || '';
  stateSelect.value = query.get('state') || '';
  fabricSelect.value = query.get('fabric') || '';

  const selected = new Set();
  const updateCompare = () => {
    compareButton.disabled = selected.size !== 2;
  };
  compareButton.addEventListener('click', () => {
    const [a, b] = [...selected].sort((x, y) => x - y);
    location.hash = `#/compare?a=${a}&b=${b}`;
  });

  const filterChanged = () => {
    const params = new URLSearchParams();
    if (scenarioSelect.value) params.set('scenario', scenarioSelect.value);
    if (stateSelect.value) params.set('state', stateSelect.value);
    if (fabricSelect.value) params.set('fabric', fabricSelect.value);
    const q = params.toString();
    location.hash = `#/runs${q ? `?${q}` : ''}`;
  };
  for (const s of [scenarioSelect, stateSelect, fabricSelect]) s.addEventListener('change', filterChanged);

  async function refresh() {
    const params = new URLSearchParams({ limit: '200' });
    if (scenarioSelect.value) params.set('scenario', scenarioSelect.value);
    if (stateSelect.value) params.set('state', stateSelect.value);
    if (fabricSelect.value) params.set('fabric', fabricSelect.value);
    try {
      const body = await get(`/v1/runs?${params}`);
      errorSlot.replaceChildren();
      const rows = (body.runs || []).map((r) => {
        const box = el('input', { type: 'checkbox', 'aria-label': `select run ${r.id}`, testid: 'run-select' });
        box.checked = selected.has(r.id);
        box.addEventListener('change', () => {
          if (box.checked) selected.add(r.id); else selected.delete(r.id);
          updateCompare();
        });
        const duration = r.duration_ms ?? (r.started_ms && !isFinal(r.state) ? Date.now() - r.started_ms : null);
        return el('tr', { testid: 'run-row', dataset: { runId: r.id, state: r.state } },
          el('td', {}, box),
          el('td', {}, el('a', { href: `#/runs/${r.id}`, testid: 'run-link' }, `#${r.id}`)),
          el('td', {}, el('a', { href: `#/scenarios/${encodeURIComponent(r.scenario)}` }, r.scenario)),
          el('td', {}, r.fabric),
          el('td', {}, stateBadge(r.state, 'run-row-state'), r.error ? el('span', { class: 'muted small', title: r.error }, ' ⚠') : null),
          el('td', { class: 'num', testid: 'run-row-score' }, fmtNumber(r.score)),
          el('td', {}, fmtTime(r.started_ms || r.created_ms)),
          el('td', { class: 'num' }, duration === null ? '–' : fmtMs(duration)));
      });
      if (rows.length === 0) rows.push(el('tr', {}, el('td', { colspan: 8, class: 'muted' }, 'No runs match.')));
      tbody.replaceChildren(...rows);
      status.textContent = `updated ${new Date().toLocaleTimeString()}`;
    } catch (e) {
      if (e.status === 401) return;
      errorSlot.replaceChildren(errorBox(e));
    }
  }
  await refresh();
  const timer = setInterval(refresh, REFRESH_MS);
  return () => clearInterval(timer);
}
