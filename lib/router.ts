/**
 * A small explicit router in Fresh 2's shape: each route module exports `handler = { GET(ctx) {…} }`,
 * the table in `routes/_table.ts` pairs it with a URLPattern and an auth policy. Moving to real Fresh
 * later means moving each module to its file-system path; handlers do not change.
 */
import type { App } from "./app.ts";
import { authenticate, type Principal } from "./auth.ts";
import { errorResponse, HttpError } from "./http.ts";
import { InvalidError } from "./errors.ts";

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/** What every handler receives. */
export interface Ctx {
  req: Request;
  url: URL;
  params: Record<string, string>;
  app: App;
  /** Who is calling; `null` only on `page` and `public` routes when no credentials came. */
  principal: Principal | null;
  info: Deno.ServeHandlerInfo;
}

export type Handler = (ctx: Ctx) => Response | Promise<Response>;
export type Handlers = Partial<Record<Method, Handler>>;

/**
 * `token`: 401 without the daemon's token (bearer, query or same-origin cookie), before the handler runs.
 * `agent`: as `token`, but a session-scoped agent token is accepted too (the plugin socket only).
 * `page`: the handler runs either way and must show no session data when `principal` is null.
 * `public`: static assets that hold no data.
 */
export type AuthPolicy = "token" | "agent" | "page" | "public";

export interface RouteDef {
  path: string;
  handler: Handlers;
  auth: AuthPolicy;
}

interface CompiledRoute extends RouteDef {
  pattern: URLPattern;
}

/** Build the request handler for a route table. Errors thrown by handlers become `{"error": "…"}`. */
export function createRouter(app: App, table: RouteDef[]) {
  const routes: CompiledRoute[] = table.map((r) => ({ ...r, pattern: new URLPattern({ pathname: r.path }) }));

  return async function route(req: Request, info: Deno.ServeHandlerInfo): Promise<Response> {
    const url = new URL(req.url);
    try {
      for (const r of routes) {
        const match = r.pattern.exec({ pathname: url.pathname });
        if (!match) continue;
        let principal = await authenticate(req, url, app.config.token);
        // A session-scoped agent token opens the plugin socket and nothing else.
        if (principal?.via === "agent" && r.auth !== "agent") principal = null;
        if ((r.auth === "token" || r.auth === "agent") && !principal) {
          throw new HttpError(401, "missing or invalid token");
        }
        const method = req.method === "HEAD" ? "GET" : req.method as Method;
        const handler = r.handler[method];
        if (!handler) {
          throw new HttpError(405, `method ${req.method} is not allowed on ${url.pathname}`, {
            allow: Object.keys(r.handler).join(", "),
          });
        }
        const params = decodeParams(match.pathname.groups);
        return await handler({ req, url, params, app, principal, info });
      }
      throw new HttpError(404, `no route for ${url.pathname}`);
    } catch (error) {
      return errorResponse(error);
    }
  };
}

/** Percent-decode path parameters. @throws {InvalidError} on a malformed escape such as `%E0%A4%A`. */
function decodeParams(groups: Record<string, string | undefined>): Record<string, string> {
  try {
    return Object.fromEntries(Object.entries(groups).map(([k, v]) => [k, decodeURIComponent(v ?? "")]));
  } catch {
    throw new InvalidError("malformed percent-escape in the path");
  }
}
