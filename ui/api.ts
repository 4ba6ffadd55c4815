/**
 * The browser's side of authentication and the REST API: the token is asked for once and kept in
 * `localStorage`; requests carry it as a bearer token, the socket as `?token=`. Without a stored token the
 * HttpOnly session cookie (same origin only) still authenticates, so a signed-in page keeps working (and so
 * does a browser whose storage is disabled).
 *
 * A 401 from any call is reported to one hook (`onSignInRequired`), which the page's live connection sets to
 * raise the sign-in prompt: no caller has to remember to.
 */
import { type LocalStore, localStore as store } from "./local_store.ts";

const TOKEN_KEY = "lvmh.token";

/** A non-2xx answer, with the daemon's `{"error"}` message and its whole parsed body (`secrets` of a 422). */
export class ApiError extends Error {
  override name = "ApiError";
  constructor(readonly status: number, message: string, readonly body: unknown = null) {
    super(message);
  }
}

/** A 401 from the daemon: the page asks for the token again (the hook has already been told). */
export class SignInRequired extends ApiError {
  override name = "SignInRequired";
  constructor(message: string) {
    super(401, message);
  }
}

/** What a failed call says to a person: the daemon's `{error}`, a sign-in request, or the exception. */
export function errorText(e: unknown): string {
  if (e instanceof SignInRequired) return "Sign in again.";
  return e instanceof Error ? e.message : String(e);
}

let signInRequired: () => void = () => {};

/** Who hears of a 401 from any call (the page's live connection, which shows the sign-in prompt). */
export function onSignInRequired(hook: () => void): void {
  signInRequired = hook;
}

/** The stored token, or null. */
export function getToken(s: LocalStore | null = store()): string | null {
  return s?.getItem(TOKEN_KEY) ?? null;
}

/** Remember the token (after the daemon accepted it). */
export function setToken(token: string, s: LocalStore | null = store()): void {
  s?.setItem(TOKEN_KEY, token);
}

/** Forget the token (sign-out, or after a 401). */
export function clearToken(s: LocalStore | null = store()): void {
  s?.removeItem(TOKEN_KEY);
}

/**
 * Call the REST API and parse its JSON answer. A stored token the daemon refuses is forgotten and the call
 * made once more on the page cookie alone (a 401 is answered before anything runs, so this repeats nothing):
 * the cookie is renewed by every sign-in, the stored token only by the sign-in island.
 * @throws {SignInRequired} on 401 with no credentials left to try (the sign-in hook told)
 * @throws {ApiError} on any other non-2xx answer
 */
export async function api<T>(
  path: string,
  init: RequestInit = {},
  s: LocalStore | null = store(),
): Promise<T> {
  const send = (token: string | null) => {
    const headers = new Headers(init.headers);
    if (token) headers.set("authorization", `Bearer ${token}`);
    if (init.body !== undefined && !headers.has("content-type")) {
      headers.set("content-type", "application/json");
    }
    return fetch(path, { ...init, headers, credentials: "same-origin" });
  };
  const token = getToken(s);
  let res = await send(token);
  if (res.status === 401 && token) {
    await res.body?.cancel();
    clearToken(s);
    res = await send(null);
  }
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch { /* a proxy's HTML error page, say */ }
  if (res.status === 401) {
    signInRequired();
    throw new SignInRequired("the daemon did not accept the token");
  }
  if (!res.ok) {
    const message = (body as { error?: unknown } | null)?.error;
    throw new ApiError(res.status, typeof message === "string" ? message : `HTTP ${res.status}`, body);
  }
  return body as T;
}

/**
 * Ask the REST API whether this browser's credentials still work (a refused WebSocket does not say why).
 * @returns false on a 401 (a stored token is then cleared); true otherwise, including when unreachable
 */
export async function credentialsAccepted(s: LocalStore | null = store()): Promise<boolean> {
  try {
    await api("/api/sessions", {}, s);
    return true;
  } catch (e) {
    return !(e instanceof SignInRequired);
  }
}

/**
 * Send the token to `/login`, which checks it and sets the HttpOnly page cookie; stores it on success.
 * @returns false when the daemon rejected the token
 * @throws {ApiError} on other failures
 */
export async function signIn(token: string, s: LocalStore | null = store()): Promise<boolean> {
  const res = await fetch("/login", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token }),
    credentials: "same-origin",
  });
  await res.body?.cancel();
  if (res.status === 401 || res.status === 400) return false;
  if (!res.ok) throw new ApiError(res.status, `sign-in failed: HTTP ${res.status}`);
  setToken(token, s);
  return true;
}

/** Clear the cookie and the stored token. */
export async function signOut(s: LocalStore | null = store()): Promise<void> {
  clearToken(s);
  const res = await fetch("/login", { method: "DELETE", credentials: "same-origin" });
  await res.body?.cancel();
}

/** The `/ws` URL for this page's origin, with the token when one is stored. */
export function socketUrl(
  loc: { protocol: string; host: string } = location,
  s: LocalStore | null = store(),
): string {
  const token = getToken(s);
  const base = `${loc.protocol === "https:" ? "wss" : "ws"}://${loc.host}/ws`;
  return token ? `${base}?token=${encodeURIComponent(token)}` : base;
}
