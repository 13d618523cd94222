// The API client. The token lives in this module's memory only: never in localStorage,
// sessionStorage, a cookie or IndexedDB, and it leaves the address bar as soon as the page
// has read it (docs/dashboard-api.md, "Starting it and the token").
import { followEvents } from "./sse.js";

let token = null;

/**
 * Take the token from the address bar's fragment (`#token=T`, possibly with `&s=SESSION`)
 * and drop it from there. Returns the session id the fragment named, if any.
 */
export function takeTokenFromLocation() {
  const params = new URLSearchParams(location.hash.replace(/^#/, ""));
  const found = params.get("token");
  const session = params.get("s");
  if (found) token = found;
  history.replaceState(null, "", location.pathname + (session ? `#s=${encodeURIComponent(session)}` : ""));
  return { session, found: Boolean(found) };
}

/** Accept a pasted dashboard URL (`http://…/#token=T`) or a bare token. */
export function setTokenFrom(text) {
  const value = text.trim();
  const hash = value.indexOf("#");
  const fragment = hash >= 0 ? value.slice(hash + 1) : "";
  const fromUrl = new URLSearchParams(fragment).get("token");
  const candidate = fromUrl ?? value;
  if (!/^[A-Za-z0-9_-]{16,200}$/.test(candidate)) return false;
  token = candidate;
  return true;
}

export function hasToken() {
  return token !== null;
}

export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details || {};
  }
}

function authHeaders() {
  return token ? { Authorization: `Bearer ${token}` } : {};
}

export async function call(method, path, body) {
  const init = { method, headers: authHeaders(), cache: "no-store" };
  if (body !== undefined) {
    init.headers = { ...init.headers, "Content-Type": "application/json" };
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (err) {
    throw new ApiError(0, "network", "the dashboard server cannot be reached", {});
  }
  if (response.status === 204) return null;
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) {
    const e = (data && data.error) || {};
    throw new ApiError(response.status, e.code || "http_error", e.message || `HTTP ${response.status}`, e.details);
  }
  return data;
}

const enc = encodeURIComponent;

export const api = {
  bootstrap: () => call("GET", "/api/bootstrap"),
  sessions: ({ q, cursor, limit = 50 } = {}) => {
    const p = new URLSearchParams({ limit: String(limit) });
    if (q) p.set("q", q);
    if (cursor) p.set("cursor", cursor);
    return call("GET", `/api/sessions?${p}`);
  },
  create: (body) => call("POST", "/api/sessions", body),
  session: (id) => call("GET", `/api/sessions/${enc(id)}`),
  rename: (id, title) => call("PATCH", `/api/sessions/${enc(id)}`, { title }),
  remove: (id) => call("DELETE", `/api/sessions/${enc(id)}`),
  history: (id, { cursor, limit = 100 } = {}) => {
    const p = new URLSearchParams({ limit: String(limit), order: "newest" });
    if (cursor) p.set("cursor", cursor);
    return call("GET", `/api/sessions/${enc(id)}/history?${p}`);
  },
  usage: (id) => call("GET", `/api/sessions/${enc(id)}/usage`),
  submit: (id, clientRequestId, text) =>
    call("POST", `/api/sessions/${enc(id)}/turns`, { client_request_id: clientRequestId, text }),
  compact: (id, clientRequestId, focus) =>
    call("POST", `/api/sessions/${enc(id)}/compact`,
      focus ? { client_request_id: clientRequestId, focus } : { client_request_id: clientRequestId }),
  cancel: (id) => call("POST", `/api/sessions/${enc(id)}/cancel`, { reason: "cancelled from the dashboard" }),
  answer: (id, requestId, decision) =>
    call("POST", `/api/sessions/${enc(id)}/permissions/${enc(requestId)}`, { decision }),
  setMode: (id, mode) => call("POST", `/api/sessions/${enc(id)}/mode`, { mode }),
};

/** Follow a session's events (see sse.js); `lastEventId` = the last seq already folded. */
export function followSession(id, options) {
  return followEvents(`/api/sessions/${enc(id)}/events`, { ...options, headers: authHeaders });
}

export function newRequestId() {
  return crypto.randomUUID();
}
