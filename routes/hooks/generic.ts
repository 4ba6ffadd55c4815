import { parseWith } from "../../lib/protocol.ts";
import { HttpError, json } from "../../lib/http.ts";
import { ForbiddenError, InvalidError } from "../../lib/errors.ts";
import { readHookJson } from "../../lib/hooks/body.ts";
import { GenericHookBody } from "../../lib/hooks/hooks.ts";
import type { Handlers } from "../../lib/router.ts";

/**
 * A prompt from anything that can POST (a bearer token or `?token=` of an operator or admin): into a live
 * session now, or into a new session spawned on a repository once it is online. 202 at once with the session's
 * id; the spawn and its prompt happen afterwards, and survive a restart in between. A repeated `Idempotency-Key` is acknowledged and not acted on again.
 */
export const handler: Handlers = {
  async POST(ctx) {
    const who = ctx.principal;
    if (!who) throw new HttpError(401, "missing or invalid token");
    if (who.role !== "operator" && who.role !== "admin") {
      throw new ForbiddenError(`POST /hooks/generic needs the operator role (this token is ${who.role})`);
    }
    const parsed = parseWith(GenericHookBody, await readHookJson(ctx.req));
    if (!parsed.ok) throw new InvalidError(parsed.message);
    const body = parsed.value;
    const key = ctx.req.headers.get("idempotency-key");
    const source = `generic:${who.name}`;
    const actor = `hook:${who.name}`;
    if (body.sessionId) {
      if (key && !await ctx.app.hooks.claim(source, key)) {
        return json({ ok: true, sessionId: body.sessionId, duplicate: true }, 202);
      }
      ctx.app.hooks.prompt(body.sessionId, body.message, body.followUp, actor);
      return json({ ok: true, sessionId: body.sessionId }, 202);
    }
    // The id is the new session's from the start, and the prompt is kept in SQLite before this answers; a
    // replayed Idempotency-Key gets the first spawn's id and starts nothing.
    const { repo, branch } = body.spawn!;
    const { sessionId, duplicate } = await ctx.app.hooks.queueSpawn(
      repo,
      branch,
      body.message,
      actor,
      {},
      key ? { source, key } : undefined,
    );
    return json({
      ok: true,
      sessionId: sessionId || null,
      spawning: true,
      ...(duplicate ? { duplicate } : {}),
    }, 202);
  },
};
