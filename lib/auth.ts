/**
 * Authentication: a bearer token (REST, plugin socket, scripts), `?token=` (browser socket) or an HttpOnly
 * cookie (pages, `EventSource`). Each finds an identity (a named token and its role, or the bootstrap admin) or
 * a session-scoped agent token. Comparisons are constant time; no token value is ever logged.
 */
import { hashToken, type Identity, type Role, type Tokens } from "./tokens.ts";
import { hmacHex, safeEqual } from "./auth_crypto.ts";

export { safeEqual };
export const COOKIE_NAME = "lvmh_auth";

/**
 * Who made a request, and how. `agent` callers hold a session-scoped token (given to spawned containers):
 * it opens the plugin socket for that one session and nothing else.
 */
export type Principal =
  | { via: "bearer" | "query" | "cookie"; name: string; role: Role }
  | { via: "agent"; sessionId: string; name: string; role: "agent" };

const AGENT_PREFIX = "agent.";

/**
 * The one-off ids Kubernetes helper Pods fetch their inputs with (`lib/kube/helper_pods.ts`; never a session id:
 * those are UUIDs). Their tokens are agent tokens of such an id, good for `/agent/clone-credential` and refused
 * on the agent socket: a helper never speaks for a session.
 */
export const HELPER_ID_PREFIX = "helper-";

/** Who acted, as approvals and the audit log name them: the token's name. */
export function actorName(principal: Principal | null): string {
  return principal?.name ?? "anonymous";
}

/**
 * The page cookie for a token: `<sha256 of the token>.<HMAC of that hash under the bootstrap token>`, so the raw
 * token never sits in a cookie jar and a cookie for a revoked token stops working with it.
 * @param key the daemon's bootstrap token (the token itself when that is the one signing in).
 */
export async function cookieValue(token: string, key = token): Promise<string> {
  const hash = await hashToken(token);
  return `${hash}.${await hmacHex(key, `lvmh-cookie-v2:${hash}`)}`;
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
 * A token that lets a plugin speak for one session only: `agent.<sessionId>.<hmac>`. Spawned containers get
 * this instead of the daemon's token, so code the agent runs cannot read other sessions or spawn more.
 */
export async function agentToken(token: string, sessionId: string): Promise<string> {
  return `${AGENT_PREFIX}${sessionId}.${await hmacHex(token, `lvmh-agent-v1:${sessionId}`)}`;
}

/** The parts authentication needs: the bootstrap token (agent tokens and cookies) and the named tokens. */
export interface AuthParts {
  token: string;
  tokens: Tokens;
}

async function checkSecret(
  secret: string,
  parts: AuthParts,
  via: "bearer" | "query",
): Promise<Principal | null> {
  if (secret.startsWith(AGENT_PREFIX)) {
    const dot = secret.lastIndexOf(".");
    const sessionId = secret.slice(AGENT_PREFIX.length, dot);
    if (dot <= AGENT_PREFIX.length) return null;
    return await safeEqual(secret, await agentToken(parts.token, sessionId))
      ? { via: "agent", sessionId, name: `agent:${sessionId}`, role: "agent" }
      : null;
  }
  const who: Identity | null = await parts.tokens.identify(secret);
  return who ? { via, ...who } : null;
}

/** What a request presented: nothing, or credentials that were checked. */
export type AuthResult = { presented: false } | { presented: true; principal: Principal | null };

/**
 * Find and check the credentials on a request.
 * A cookie counts only when `Origin` is ours, or absent on a safe method (against CSRF and socket hijacking).
 */
export async function authenticate(req: Request, url: URL, parts: AuthParts): Promise<AuthResult> {
  const header = req.headers.get("authorization");
  if (header) {
    const m = /^Bearer\s+(.+)$/i.exec(header.trim());
    return { presented: true, principal: m ? await checkSecret(m[1], parts, "bearer") : null };
  }
  const query = url.searchParams.get("token");
  if (query !== null) return { presented: true, principal: await checkSecret(query, parts, "query") };
  const cookie = readCookie(req, COOKIE_NAME);
  if (cookie === null) return { presented: false };
  const dot = cookie.indexOf(".");
  const hash = cookie.slice(0, dot);
  if (
    dot <= 0 || !await safeEqual(cookie.slice(dot + 1), await hmacHex(parts.token, `lvmh-cookie-v2:${hash}`))
  ) {
    return { presented: true, principal: null };
  }
  // Browsers send Origin on cross-site requests and on every WebSocket handshake: it must be ours.
  // Without it, only safe methods (page loads) may ride on the cookie.
  const origin = req.headers.get("origin");
  const safe = req.method === "GET" || req.method === "HEAD";
  if (origin !== null ? origin !== url.origin : !safe) return { presented: true, principal: null };
  const who = await parts.tokens.identifyHash(hash);
  return { presented: true, principal: who ? { via: "cookie", ...who } : null };
}

/** Generate a new random token: 32 bytes, base64url. */
export function generateToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}
