/**
 * Authentication: a bearer token (REST, plugin socket), `?token=` (browser socket) or an HttpOnly cookie
 * (server-rendered pages). Every comparison is constant time; the token itself is never logged.
 */
import { timingSafeEqual } from "node:crypto";

export const COOKIE_NAME = "lvmh_auth";

/**
 * Who made a request, and how. `agent` callers hold a session-scoped token (given to spawned containers):
 * it opens the plugin socket for that one session and nothing else.
 */
export type Principal = { via: "bearer" | "query" | "cookie" } | { via: "agent"; sessionId: string };

const AGENT_PREFIX = "agent.";

/** Who acted, as approvals and (later) the audit log name them: the bootstrap token is "admin". */
export function actorName(principal: Principal | null): string {
  if (!principal) return "anonymous";
  return principal.via === "agent" ? `agent:${principal.sessionId}` : "admin";
}

const encoder = new TextEncoder();

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
}

/** Compare two secrets in time independent of where they differ (both are hashed to equal length first). */
export async function safeEqual(a: string, b: string): Promise<boolean> {
  const [ha, hb] = await Promise.all([sha256(a), sha256(b)]);
  return timingSafeEqual(ha, hb);
}

/** The cookie value for a token: an HMAC, so the raw token never sits in a cookie jar. */
export function cookieValue(token: string): Promise<string> {
  return hmacHex(token, "lvmh-cookie-v1");
}

function readCookie(req: Request, name: string): string | null {
  const header = req.headers.get("cookie");
  if (!header) return null;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

async function hmacHex(key: string, message: string): Promise<string> {
  const k = await crypto.subtle.importKey(
    "raw",
    encoder.encode(key),
    { name: "HMAC", hash: "SHA-256" },
    false,
    [
      "sign",
    ],
  );
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", k, encoder.encode(message)));
  return Array.from(mac, (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * A token that lets a plugin speak for one session only: `agent.<sessionId>.<hmac>`. Spawned containers get
 * this instead of the daemon's token, so code the agent runs cannot read other sessions or spawn more.
 */
export async function agentToken(token: string, sessionId: string): Promise<string> {
  return `${AGENT_PREFIX}${sessionId}.${await hmacHex(token, `lvmh-agent-v1:${sessionId}`)}`;
}

async function checkSecret(secret: string, token: string): Promise<Principal | null> {
  if (secret.startsWith(AGENT_PREFIX)) {
    const dot = secret.lastIndexOf(".");
    const sessionId = secret.slice(AGENT_PREFIX.length, dot);
    if (dot <= AGENT_PREFIX.length) return null;
    return await safeEqual(secret, await agentToken(token, sessionId)) ? { via: "agent", sessionId } : null;
  }
  return await safeEqual(secret, token) ? { via: "bearer" } : null;
}

/**
 * Find valid credentials on a request, or `null`.
 * A cookie counts only when `Origin` is ours, or absent on a safe method (against CSRF and socket hijacking).
 */
export async function authenticate(req: Request, url: URL, token: string): Promise<Principal | null> {
  const header = req.headers.get("authorization");
  if (header) {
    const m = /^Bearer\s+(.+)$/i.exec(header.trim());
    return m ? await checkSecret(m[1], token) : null;
  }
  const query = url.searchParams.get("token");
  if (query !== null) {
    const found = await checkSecret(query, token);
    return found?.via === "bearer" ? { via: "query" } : found;
  }
  const cookie = readCookie(req, COOKIE_NAME);
  if (cookie !== null && await safeEqual(cookie, await cookieValue(token))) {
    // Browsers send Origin on cross-site requests and on every WebSocket handshake: it must be ours.
    // Without it, only safe methods (page loads) may ride on the cookie.
    const origin = req.headers.get("origin");
    const safe = req.method === "GET" || req.method === "HEAD";
    if (origin !== null ? origin === url.origin : safe) return { via: "cookie" };
  }
  return null;
}

/** Generate a new random token: 32 bytes, base64url. */
export function generateToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}
