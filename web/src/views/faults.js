// #/faults: what is broken on the fabric right now. GET /v1/faults lists the fault journal's
// unreverted entries (across runs and agents, including what a failed or crashed run left behind),
// refreshed every 2 s while the page is shown. Operators revert a fault no running run owns
// (POST /v1/faults/ID/revert); a fault of a running run is taken back by aborting that run, which
// the page offers instead. Rows are updated in place so that a refresh never eats a click.
import { canOperate, get, post, whoami } from '../api.js';
import { el, errorBox, fmtAge, fmtTime, stateBadge } from '../util.js';

const REFRESH_MS = 2000;
const COLUMNS = ['id', 'kind', 'target', 'params', 'agent', 'state', 'owner run', 'age', ''];

// The journal states (server/api/fault_handlers.cc).
const STATE_TITLES = {
  intent: 'journaled; the apply was not confirmed (in progress, or the process died before it knew)',
  applied: 'applied and in force',
  failed: 'a revert was attempted and failed',
};

function targetText(target) {
  const t = target || {};
  if (t.netns && t.ifname) return `${t.netns} / ${t.ifname}`;
  return t.ifname || t.netns || JSON.stringify(t);
}

function paramsText(params) {
  return Object.entries(params || {})
    .map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : v}`).join(' ');
}

export async function faultsView(ctx) {
  const page = el('section', { class: 'faults-page', testid: 'faults-page' });
  ctx.root.append(page);
  const who = await whoami();
  const operator = canOperate(who);

  const count = el('span', { testid: 'faults-count' });
  const status = el('span', { class: 'muted', testid: 'faults-updated' });
  const errorSlot = el('div');   // the list could not be loaded (cleared by the next good refresh)
  const actionSlot = el('div');  // outcome of the last revert / abort (kept until the next one)
  const tbody = el('tbody');
  const table = el('table', { class: 'faults', testid: 'faults-table' },
    el('thead', {}, el('tr', {}, COLUMNS.map((h) => el('th', { class: h === 'age' ? 'num' : null }, h)))),
    tbody);
  page.append(el('h1', {}, 'Faults in force'),
    el('p', { class: 'muted' },
      'Every fault applied on the fabric right now, across runs and agents, from the fault journal. ' +
      'A running run reverts its own faults on schedule; a fault left behind by a run that failed, ' +
      'was aborted or crashed stays until an operator reverts it here (or serve restarts).'),
    el('div', { class: 'toolbar' }, count, status),
    errorSlot, actionSlot, table);
  if (!operator) {
    // Like Abort on the run page, the controls are not there at all for viewers; this says why.
    count.parentNode.before(el('p', { class: 'muted small', testid: 'faults-viewer-note' },
      `Your role (${who.role}) can see faults but not revert them; operators and admins can.`));
  }

  const busy = new Set();  // "fault:ID" / "run:ID" while a request for it is under way
  const rows = new Map();  // fault id -> {row, signature, age}
  let empty = null;
  let latest = [];
  let loading = null;
  let closed = false;

  const showOk = (text) => actionSlot.replaceChildren(
    el('div', { class: 'ok-box', testid: 'fault-action-message', role: 'status' }, text));
  const showError = (text) => actionSlot.replaceChildren(errorBox(text, 'fault-action-error'));
  const describe = (f) => `fault #${f.id} (${f.kind} on ${targetText(f.target)})`;
  const apiError = (e) => `${e.message} [${e.code}${e.status ? `, HTTP ${e.status}` : ''}]`;

  async function revert(f) {
    busy.add(`fault:${f.id}`);
    render();
    try {
      await post(`/v1/faults/${f.id}/revert`);
      showOk(`Reverted ${describe(f)}.`);
    } catch (e) {
      if (e.status === 401) return;
      showError(`Could not revert ${describe(f)}: ${apiError(e)}`);
    } finally {
      busy.delete(`fault:${f.id}`);
      await refreshNow();
    }
  }

  async function abortOwner(f) {
    if (!confirm(`Abort run #${f.run_id}? Every fault it applied is reverted at once.`)) return;
    busy.add(`run:${f.run_id}`);
    render();
    try {
      await post(`/v1/runs/${f.run_id}/abort`);
      showOk(`Abort of run #${f.run_id} requested: it reverts its faults now.`);
    } catch (e) {
      if (e.status === 401) return;
      showError(`Could not abort run #${f.run_id} (owner of ${describe(f)}): ${apiError(e)}`);
    } finally {
      busy.delete(`run:${f.run_id}`);
      await refreshNow();
    }
  }

  function actionCell(f) {
    const cell = el('td', { class: 'actions-cell' });
    if (!operator) return cell;
    const reverting = busy.has(`fault:${f.id}`);
    if (f.owned_by_running_run) {
      const reason = `run #${f.run_id} is running and reverts this fault on schedule; abort the run to revert it now`;
      const aborting = busy.has(`run:${f.run_id}`);
      cell.append(
        el('button', { testid: 'revert-button', disabled: true, title: reason }, 'Revert now'), ' ',
        el('button', { class: 'danger', testid: 'abort-owner-button', disabled: aborting, onclick: () => abortOwner(f) },
          aborting ? 'Aborting…' : `Abort run #${f.run_id}`),
        el('div', { class: 'muted small', testid: 'fault-owned-note' }, reason));
    } else {
      cell.append(el('button', { class: 'primary', testid: 'revert-button', disabled: reverting, onclick: () => revert(f) },
        reverting ? 'Reverting…' : 'Revert now'));
    }
    return cell;
  }

  function buildRow(f) {
    const age = el('td', { class: 'num', testid: 'fault-age', title: `applied ${fmtTime(f.applied_wall_ms)}` }, fmtAge(f.age_ms));
    const owner = f.run_id === null || f.run_id === undefined
      ? el('td', { class: 'muted', testid: 'fault-owner' }, 'none')
      : el('td', { testid: 'fault-owner' },
        el('a', { href: `#/runs/${f.run_id}`, testid: 'fault-owner-link' }, `#${f.run_id}`), ' ',
        f.run_state ? stateBadge(f.run_state, 'fault-owner-state') : null);
    const row = el('tr', {
      testid: 'fault-row',
      dataset: { faultId: f.id, kind: f.kind, state: f.state, owned: String(!!f.owned_by_running_run) },
    },
    el('td', { class: 'num' }, `#${f.id}`),
    el('td', { testid: 'fault-kind' }, f.kind),
    el('td', { class: 'mono', testid: 'fault-target', title: JSON.stringify(f.target) }, targetText(f.target)),
    el('td', { class: 'mono small', testid: 'fault-params' }, paramsText(f.params)),
    el('td', { testid: 'fault-agent' }, f.agent),
    el('td', {}, el('span', { class: `badge fault-${f.state}`, testid: 'fault-state', title: STATE_TITLES[f.state] || f.state }, f.state)),
    owner, age, actionCell(f));
    return { row, age };
  }

  // Rows whose content is unchanged are kept (only the age is updated), so that a button under
  // the pointer is not replaced between mousedown and mouseup.
  function render() {
    const order = [];
    const seen = new Set();
    for (const f of latest) {
      const { age_ms: ageMs, ...rest } = f;
      const signature = JSON.stringify([rest, busy.has(`fault:${f.id}`), busy.has(`run:${f.run_id}`)]);
      let entry = rows.get(f.id);
      if (!entry || entry.signature !== signature) {
        const built = buildRow(f);
        if (entry) entry.row.replaceWith(built.row);
        entry = { ...built, signature };
        rows.set(f.id, entry);
      } else {
        entry.age.textContent = fmtAge(ageMs);
      }
      seen.add(f.id);
      order.push(entry.row);
    }
    for (const id of [...rows.keys()]) if (!seen.has(id)) rows.delete(id);
    if (!order.length) {
      empty = empty || el('tr', { testid: 'faults-empty' },
        el('td', { colspan: COLUMNS.length, class: 'empty-ok' }, 'No faults in force on the fabric.'));
      order.push(empty);
    }
    const current = [...tbody.children];
    if (current.length !== order.length || current.some((node, i) => node !== order[i])) tbody.replaceChildren(...order);
    count.textContent = latest.length === 1 ? '1 fault in force' : `${latest.length} faults in force`;
  }

  async function load() {
    try {
      const body = await get('/v1/faults');
      if (closed) return;
      latest = body.faults || [];
      errorSlot.replaceChildren();
      render();
      status.textContent = `· updated ${new Date().toLocaleTimeString()}`;
    } catch (e) {
      if (e.status === 401 || closed) return;
      errorSlot.replaceChildren(errorBox(`Could not list the faults: ${apiError(e)}`, 'faults-error'));
    }
  }
  // One request at a time; after an action, wait for the one in flight, then ask again.
  const refresh = () => (loading = loading || load().finally(() => { loading = null; }));
  async function refreshNow() {
    if (loading) await loading;
    return refresh();
  }

  await refresh();
  const timer = setInterval(refresh, REFRESH_MS);
  return () => { closed = true; clearInterval(timer); };
}
