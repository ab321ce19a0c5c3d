// The dashboard's only way to the server: the public /v1 API with the token from localStorage.
// A 401 sends the user back to the login page with the server's message; other errors are thrown
// as ApiError carrying the HTTP status and the {"error": {code, message}} body.

const TOKEN_KEY = 'fabric-chaos.token';
const LOGIN_MESSAGE_KEY = 'fabric-chaos.login-message';

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const TOKENLESS_KEY = 'fabric-chaos.tokenless';

export function token() { return localStorage.getItem(TOKEN_KEY) || ''; }
export function setToken(value) {
  if (value) localStorage.setItem(TOKEN_KEY, value);
  else localStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(TOKENLESS_KEY);
  identity = null;
}
// For a server started with --no-auth: the user chose to go on without a token.
export function tokenless() { return sessionStorage.getItem(TOKENLESS_KEY) === '1'; }
export function setTokenless() { localStorage.removeItem(TOKEN_KEY); sessionStorage.setItem(TOKENLESS_KEY, '1'); identity = null; }

// The message the login page shows once (why the user was sent there).
export function takeLoginMessage() {
  const message = sessionStorage.getItem(LOGIN_MESSAGE_KEY) || '';
  sessionStorage.removeItem(LOGIN_MESSAGE_KEY);
  return message;
}

export function sendToLogin(message) {
  if (message) sessionStorage.setItem(LOGIN_MESSAGE_KEY, message);
  identity = null;
  if (!location.hash.startsWith('#/login')) location.hash = '#/login';
}

export async function request(method, path, body) {
  const headers = { Accept: 'application/json' };
  const t = token();
  if (t) headers.Authorization = `Bearer ${t}`;
  const init = { method, headers };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, 'UNAVAILABLE', `the server did not answer (${e.message})`);
  }
  const text = await response.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch { data = null; }
  }
  if (response.ok) return data;
  const code = data && data.error ? data.error.code : `HTTP_${response.status}`;
  const message = data && data.error ? data.error.message : `${method} ${path}: HTTP ${response.status}`;
  if (response.status === 401) {
    sessionStorage.removeItem(TOKENLESS_KEY);
    sendToLogin(t ? `The server refused the token: ${message}` : `Log in with an API token: ${message}`);
  }
  throw new ApiError(response.status, code, message);
}

export const get = (path) => request('GET', path);
export const post = (path, body) => request('POST', path, body === undefined ? {} : body);
export const put = (path, body) => request('PUT', path, body);

let identity = null;

// {name, role} of the caller, cached until the token changes. A server without /v1/whoami (auth
// not built in) or with auth off lets everyone do everything.
export async function whoami() {
  if (identity) return identity;
  try {
    identity = await get('/v1/whoami');
  } catch (e) {
    if (e.status === 404) identity = { name: 'anonymous', role: 'admin' };
    else throw e;
  }
  return identity;
}

export function canOperate(who) { return !!who && (who.role === 'operator' || who.role === 'admin'); }

// The run's event stream URL; EventSource cannot send headers, hence the query parameter.
export function streamUrl(runId) {
  const t = token();
  return `/v1/runs/${encodeURIComponent(runId)}/stream` + (t ? `?access_token=${encodeURIComponent(t)}` : '');
}
