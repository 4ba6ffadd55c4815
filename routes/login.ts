/**
 * Sign-in and sign-out for pages. `POST /login` checks the token and sets the HttpOnly, SameSite=Strict cookie
 * whose value is an HMAC of the token (`cookieValue`), so server-rendered pages can show data; `DELETE /login`
 * clears it. Both refuse a foreign `Origin`. Accepts JSON (the island) and a plain form post (before hydration).
 */
import { COOKIE_NAME, cookieValue } from "../lib/auth.ts";
import { HttpError, json, readJson, readText } from "../lib/http.ts";
import { LoginBody } from "../lib/protocol.ts";
import { type Ctx, signinFailed } from "../lib/router.ts";

const MAX_AGE_S = 30 * 24 * 3600;
const FORM_MAX_BYTES = 4096;

function checkOrigin(ctx: Ctx): void {
  const origin = ctx.req.headers.get("origin");
  if (origin !== null && origin !== ctx.url.origin) {
    throw new HttpError(403, "cross-origin sign-in is refused");
  }
}

function cookie(ctx: Ctx, value: string, maxAge: number): string {
  const secure = ctx.url.protocol === "https:" ? "; Secure" : "";
  return `${COOKIE_NAME}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${secure}`;
}

async function formToken(req: Request): Promise<string> {
  return new URLSearchParams(await readText(req, FORM_MAX_BYTES)).get("token")?.trim() ?? "";
}

export const handler = {
  async POST(ctx: Ctx): Promise<Response> {
    checkOrigin(ctx);
    const isForm = (ctx.req.headers.get("content-type") ?? "").startsWith(
      "application/x-www-form-urlencoded",
    );
    const token = isForm ? await formToken(ctx.req) : (await readJson(ctx.req, LoginBody)).token;
    // Any named token but an agent's opens the pages; what it may do there is its role's business.
    const who = token.length > 0 ? await ctx.app.tokens.identify(token) : null;
    const ok = who !== null && who.role !== "agent";
    if (!ok) {
      try {
        signinFailed(ctx.app, ctx.info, "POST /login");
      } catch (error) {
        if (!isForm) throw error;
      }
    }
    const value = ok ? await cookieValue(token, ctx.app.config.token) : "";
    if (isForm) {
      const headers: Record<string, string> = {
        location: ok ? "/" : "/?signin=failed",
        "cache-control": "no-store",
      };
      if (ok) headers["set-cookie"] = cookie(ctx, value, MAX_AGE_S);
      return new Response(null, { status: 303, headers });
    }
    if (!ok) throw new HttpError(401, "token not accepted");
    ctx.app.audit.append({ actor: who!.name, role: who!.role, action: "signin" });
    return json({ ok: true, name: who!.name, role: who!.role }, 200, {
      "set-cookie": cookie(ctx, value, MAX_AGE_S),
    });
  },

  DELETE(ctx: Ctx): Response {
    checkOrigin(ctx);
    return json({ ok: true }, 200, { "set-cookie": cookie(ctx, "", 0) });
  },
};
