/**
 * Authentication: a bearer token (REST, plugin socket), `?token=` (browser socket) or an HttpOnly cookie
 * (server-rendered pages). Every comparison is constant time; the token itself is never logged.
 */
import { timingSafeEqual } from "node:crypto";

export const COOKIE_NAME = "lvmh_auth";

/** Who made a request, and how; `cookie` callers must pass the Origin check on state changes. */
export interface Principal {
  via: "bearer" | "query" | "cookie";
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
export async function cookieValue(token: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    encoder.encode(token),
    { name: "HMAC", hash: "SHA-256" },
    false,
    [
      "sign",
    ],
  );
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode("lvmh-cookie-v1")));
  return Array.from(mac, (b) => b.toString(16).padStart(2, "0")).join("");
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

/**
 * Find valid credentials on a request, or `null`.
 * A cookie counts only when `Origin` is ours, or absent on a safe method (against CSRF and socket hijacking).
 */
export async function authenticate(req: Request, url: URL, token: string): Promise<Principal | null> {
  const header = req.headers.get("authorization");
  if (header) {
    const m = /^Bearer\s+(.+)$/i.exec(header.trim());
    return m && await safeEqual(m[1], token) ? { via: "bearer" } : null;
  }
  const query = url.searchParams.get("token");
  if (query !== null) return await safeEqual(query, token) ? { via: "query" } : null;
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
