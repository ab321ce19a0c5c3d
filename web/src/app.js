// The dashboard's entry point: hash routing between the views. Each view renders into #view and
// returns a cleanup function (timers, event streams) that runs when the route changes.
import { ApiError, sendToLogin, setToken, token, tokenless, whoami } from './api.js';
import { el, errorBox, parseHash } from './util.js';
import { loginView } from './views/login.js';
import { runsView } from './views/runs.js';
import { runView } from './views/run.js';
import { scenariosView, scenarioView } from './views/scenarios.js';
import { compareView } from './views/compare.js';
import { faultsView } from './views/faults.js';
import { fabricsView, fabricView } from './views/fabrics.js';

const view = document.getElementById('view');
let cleanup = null;
let generation = 0;

async function renderWho() {
  const box = document.querySelector('[data-testid="whoami"]');
  box.replaceChildren();
  try {
    const who = await whoami();
    box.append(el('span', { class: 'who-name' }, `${who.name} `),
      el('span', { class: `role role-${who.role}`, testid: 'role' }, who.role), ' ',
      el('button', { class: 'link', testid: 'logout', onclick: () => { setToken(''); sendToLogin(''); } }, 'log out'));
  } catch {
    box.append(el('a', { href: '#/login' }, 'log in'));
  }
}

async function route() {
  const mine = ++generation;
  if (cleanup) { try { cleanup(); } catch (e) { console.warn(e); } cleanup = null; }
  const { parts, query } = parseHash(location.hash);
  const section = parts[0] || 'runs';
  document.querySelectorAll('[data-nav]').forEach((a) => a.classList.toggle('active', a.dataset.nav === section));
  view.replaceChildren();
  const ctx = { root: view, query, isCurrent: () => mine === generation };
  let done = null;
  try {
    if (section === 'login') {
      document.querySelector('[data-testid="whoami"]').replaceChildren();
      done = await loginView(ctx);
    } else if (!token() && !tokenless()) {
      // Without a token every /v1 call would fail with 401: ask for one first.
      sendToLogin('');
    } else {
      renderWho();
      if (section === 'runs' && parts[1]) done = await runView(ctx, parts[1]);
      else if (section === 'runs') done = await runsView(ctx);
      else if (section === 'scenarios' && parts[1]) done = await scenarioView(ctx, parts[1]);
      else if (section === 'scenarios') done = await scenariosView(ctx);
      else if (section === 'compare') done = await compareView(ctx);
      else if (section === 'faults') done = await faultsView(ctx);
      else if (section === 'fabrics' && parts[1]) done = await fabricView(ctx, parts[1]);
      else if (section === 'fabrics') done = await fabricsView(ctx);
      else view.append(errorBox(`No page ${location.hash}`));
    }
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return;  // already on its way to #/login
    if (mine === generation) view.append(errorBox(e));
  }
  // A view superseded while it was loading stops its timers at once.
  if (mine === generation) cleanup = done;
  else if (done) done();
}

window.addEventListener('hashchange', route);
if (!location.hash) location.hash = '#/runs';
else route();
