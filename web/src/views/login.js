// #/login: paste an API token; it is checked with GET /v1/whoami before it is kept.
import { get, setToken, setTokenless, takeLoginMessage, token } from '../api.js';
import { el } from '../util.js';

export async function loginView(ctx) {
  const message = el('p', { class: 'login-message', testid: 'login-message', role: 'status' }, takeLoginMessage());
  const input = el('input', {
    type: 'password', name: 'token', autocomplete: 'off', placeholder: 'fct_…', testid: 'login-token',
    size: 70, value: token(),
  });
  const form = el('form', { class: 'login', testid: 'login-form' },
    el('h1', {}, 'Log in'),
    el('p', {}, 'Paste an API token. `fabric-chaos serve` writes the admin token to admin.token next to its database; an admin can create others with POST /v1/tokens.'),
    el('label', {}, 'Token ', input),
    el('div', { class: 'toolbar' },
      el('button', { type: 'submit', class: 'primary', testid: 'login-submit' }, 'Log in'),
      el('button', { type: 'button', testid: 'login-tokenless', onclick: () => tryTokenless(message) },
        'Continue without a token (server started with --no-auth)')),
    message);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const value = input.value.trim();
    if (!value) { message.textContent = 'Enter a token.'; return; }
    setToken(value);
    message.textContent = 'Checking…';
    try {
      // Not whoami(): a 404 there means "no auth", which says nothing about this token.
      const who = await fetchWho();
      message.textContent = `Logged in as ${who.name} (${who.role}).`;
      location.hash = '#/runs';
    } catch (e) {
      setToken('');
      // The 401 path of request() already set the hash to #/login; show the reason here.
      message.textContent = e.status === 401 ? `Token rejected: ${e.message}` : `Could not log in: ${e.message}`;
    }
  });
  ctx.root.append(form);
  input.focus();
  return null;
}

async function fetchWho() {
  try {
    return await get('/v1/whoami');
  } catch (e) {
    if (e.status === 404) return { name: 'anonymous', role: 'admin' };
    throw e;
  }
}

async function tryTokenless(message) {
  setTokenless();
  message.textContent = 'Checking…';
  try {
    await fetchWho();
    location.hash = '#/runs';
  } catch (e) {
    message.textContent = e.status === 401 ? `This server needs a token: ${e.message}` : `Could not connect: ${e.message}`;
  }
}
