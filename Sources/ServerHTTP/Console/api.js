// Calls to the server's HTTP API (Protocol/HTTP.md), with the header that lets a request
// authenticated by the session cookie change things.
import { parseTyped } from './values.js';

export class APIError extends Error {
  constructor(status, body) {
    super(body && body.message ? body.message : `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

// Returns the response's JSON (plain), or throws APIError.
export async function call(method, path, body, headers = {}) {
  const response = await send(method, path, body, headers);
  const text = await response.text();
  const data = text ? JSON.parse(text) : null;
  if (!response.ok) throw new APIError(response.status, data);
  return data;
}

// Like call, but the body is read typed (records), with the response's status.
export async function callTyped(method, path, body, headers = {}) {
  const response = await send(method, path, body, headers);
  const text = await response.text();
  return { status: response.status, ok: response.ok, etag: response.headers.get('ETag'), value: text ? parseTyped(text) : null, json: text ? JSON.parse(text) : null };
}

// A request that got no answer at all: the server (or the network) cannot be reached.
export class OfflineError extends Error {
  constructor() { super('the server cannot be reached'); }
}

// Whether the server answers, as the last request found; `reachability` tells each change
// (its event's `detail` is true or false). While it does not, it is asked again every 3 s (and
// at once when the browser says it is online), so a page whose event stream stayed open (a
// proxy, the browser's own offline mode) still learns that it can send again.
export const reachability = new EventTarget();
let reachable = true;
let probing = null;

function noteReachable(now) {
  if (now === reachable) return;
  reachable = now;
  clearInterval(probing);
  probing = now ? null : setInterval(probe, 3000);
  reachability.dispatchEvent(new CustomEvent('change', { detail: now }));
}

window.addEventListener('online', () => { if (!reachable) probe(); });

// Asks whether the server answers (any answer counts, a 401 too); resolves to the status, or 0
// when there was no answer.
export function probe() {
  return send('GET', '/api/me', undefined, {}).then((response) => response.status, () => 0);
}

// Tells when the server answered 401 to a request made with the session: it ended (revoked,
// expired, the password changed). The console then asks for a login; what waits stays.
export const session = new EventTarget();

// Requests that sign in rather than use a session: their 401 is a wrong password or secret.
const signsIn = ['/api/login', '/api/join', '/api/invitation'];

function send(method, path, body, headers) {
  const init = { method, credentials: 'same-origin', headers: { 'X-PlistSync-CSRF': '1', ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    init.headers['Content-Type'] = 'application/json';
  }
  return fetch(path, init).then((response) => {
    noteReachable(true);
    if (response.status === 401 && !signsIn.includes(path)) session.dispatchEvent(new Event('ended'));
    return response;
  }, () => { noteReachable(false); throw new OfflineError(); });
}

export function path(...segments) {
  return '/api/' + segments.map(encodeURIComponent).join('/');
}
