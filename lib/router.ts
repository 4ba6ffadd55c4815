/**
 * A small explicit router in Fresh 2's shape: each route module exports `handler = { GET(ctx) {…} }`,
 * the table in `routes/_table.ts` pairs it with a URLPattern, an auth policy and the least role per method.
 * Moving to real Fresh later means moving each module to its file-system path; handlers do not change.
 */
import type { App } from "./app.ts";
import { authenticate, type Principal } from "./auth.ts";
import { errorResponse, HttpError } from "./http.ts";
import { ForbiddenError, InvalidError } from "./errors.ts";
import type { Role } from "./tokens.ts";

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/** What every handler receives. */
export interface Ctx {
  req: Request;
  url: URL;
  params: Record<string, string>;
  app: App;
  /** Who is calling; `null` only on `page` and `public` routes when no valid credentials came. */
  principal: Principal | null;
  info: Deno.ServeHandlerInfo;
  /** Append an audit row for this request's caller. */
  audit(action: string, entry?: { sessionId?: string | null; detail?: unknown }): void;
}

export type Handler = (ctx: Ctx) => Response | Promise<Response>;
export type Handlers = Partial<Record<Method, Handler>>;

/**
 * `token`: 401 without valid credentials (bearer, query or same-origin cookie), before the handler runs; then
 * the caller's role must reach the route's role for the method (403 otherwise); agent tokens get 403.
 * `agent`: the plugin socket: agent tokens (named `agent` role or session-scoped) and admins only.
 * `page`: the handler runs either way and must show no session data when `principal` is null.
 * `public`: static assets that hold no data, the sign-in endpoint, and the health answer for load balancers.
 */
export type AuthPolicy = "token" | "agent" | "page" | "public";

export interface RouteDef {
  path: string;
  handler: Handlers;
  auth: AuthPolicy;
  /** The least role per method on `token` routes: GET defaults to viewer, every other method to admin. */
  roles?: Partial<Record<Method, Role>>;
}

interface CompiledRoute extends RouteDef {
  pattern: URLPattern;
}

/** Viewer < operator < admin; an agent token holds none of them. */
const RANK: Record<Role, number> = { agent: 0, viewer: 1, operator: 2, admin: 3 };

/** The least role a method on a route needs. */
export function requiredRole(route: RouteDef, method: Method): Role {
  return route.roles?.[method] ?? (method === "GET" ? "viewer" : "admin");
}

/** Build the request handler for a route table. Errors thrown by handlers become `{"error": "…"}`. */
export function createRouter(app: App, table: RouteDef[]) {
  const routes: CompiledRoute[] = table.map((r) => ({ ...r, pattern: new URLPattern({ pathname: r.path }) }));
  const parts = { token: app.config.token, tokens: app.tokens };

  return async function route(req: Request, info: Deno.ServeHandlerInfo): Promise<Response> {
    const url = new URL(req.url);
    try {
      for (const r of routes) {
        const match = r.pattern.exec({ pathname: url.pathname });
        if (!match) continue;
        const method = req.method === "HEAD" ? "GET" : req.method as Method;
        const auth = await authenticate(req, url, parts);
        let principal = auth.presented ? auth.principal : null;
        // Wrong credentials on an API route count against the caller's address; a valid token never waits.
        if (auth.presented && !principal && (r.auth === "token" || r.auth === "agent")) {
          signinFailed(app, info, `${req.method} ${url.pathname}`);
        }
        // A session-scoped agent token opens the plugin socket and nothing else.
        if (principal?.role === "agent" && r.auth !== "agent") {
          if (r.auth === "token") throw new ForbiddenError("an agent token opens the plugin socket only");
          principal = null;
        }
        if ((r.auth === "token" || r.auth === "agent") && !principal) {
          throw new HttpError(401, "missing or invalid token");
        }
        if (r.auth === "agent" && principal!.role !== "agent" && principal!.role !== "admin") {
          throw new ForbiddenError(`a ${principal!.role} token cannot open the plugin socket`);
        }
        const handler = r.handler[method];
        if (!handler) {
          throw new HttpError(405, `method ${req.method} is not allowed on ${url.pathname}`, {
            allow: Object.keys(r.handler).join(", "),
          });
        }
        if (r.auth === "token") {
          const need = requiredRole(r, method);
          if (RANK[principal!.role] < RANK[need]) {
            throw new ForbiddenError(
              `${method} ${r.path} needs the ${need} role (this token is ${principal!.role})`,
            );
          }
        }
        const params = decodeParams(match.pathname.groups);
        const who = principal;
        let audited: Promise<void> | undefined;
        const audit: Ctx["audit"] = (action, entry = {}) =>
          void (audited = app.audit.append({
            actor: who?.name ?? "anonymous",
            role: who?.role ?? null,
            action,
            ...entry,
          }));
        const res = await handler({ req, url, params, app, principal, info, audit });
        // An action is answered once it is on record (a shared database's append is a round trip away).
        await audited;
        return res;
      }
      throw new HttpError(404, `no route for ${url.pathname}`);
    } catch (error) {
      return errorResponse(error);
    }
  };
}

/**
 * Count a failed authentication from the caller's address, audit it, and refuse with 429 once the address is
 * being slowed.
 * @throws {HttpError} 429 with `Retry-After` when slowed.
 */
export function signinFailed(app: App, info: Deno.ServeHandlerInfo, what: string): void {
  const address = (info.remoteAddr as Deno.NetAddr).hostname ?? "unknown";
  const waiting = app.signins.retryAfter(address);
  const wait = waiting ?? app.signins.failed(address);
  // While slowed, failures are not written one by one: a flood must not grow the audit log.
  if (waiting === null) {
    app.audit.append({ actor: "unknown", role: null, action: "auth.failed", detail: { address, what } });
  }
  if (wait !== null) {
    throw new HttpError(429, "too many failed sign-ins; try again later", { "retry-after": String(wait) });
  }
}

/** Percent-decode path parameters. @throws {InvalidError} on a malformed escape such as `%E0%A4%A`. */
function decodeParams(groups: Record<string, string | undefined>): Record<string, string> {
  try {
    return Object.fromEntries(Object.entries(groups).map(([k, v]) => [k, decodeURIComponent(v ?? "")]));
  } catch {
    throw new InvalidError("malformed percent-escape in the path");
  }
}
