import { HttpError, json } from "../../lib/http.ts";
import { readHookJson } from "../../lib/hooks/body.ts";
import { parseGitlab } from "../../lib/hooks/gitlab_events.ts";
import type { Handlers } from "../../lib/router.ts";

/**
 * GitLab's project webhook, checked against the hook secret (`X-Gitlab-Token`, constant-time). It answers 202
 * without waiting for a spawn, since GitLab disables hooks that time out or fail; replays (`Idempotency-Key`, else
 * `X-Gitlab-Event-UUID`) and events lvmh does not act on get 202 too. 404 while no secret is set.
 */
export const handler: Handlers = {
  async POST(ctx) {
    const hooks = ctx.app.hooks;
    if (hooks.gitlabSecret.value() === null) throw new HttpError(404, "the GitLab hook is not enabled");
    if (!await hooks.gitlabSecret.check(ctx.req.headers.get("x-gitlab-token"))) {
      await ctx.req.body?.cancel();
      throw new HttpError(401, "wrong X-Gitlab-Token");
    }
    const payload = await readHookJson(ctx.req);
    const key = ctx.req.headers.get("idempotency-key") ?? ctx.req.headers.get("x-gitlab-event-uuid");
    if (key && !await hooks.claim("gitlab", key)) return json({ ok: true, duplicate: true }, 202);
    const action = parseGitlab(ctx.req.headers.get("x-gitlab-event"), payload);
    if (!action) return json({ ok: true, ignored: true }, 202);
    // Quick (a frame sent or a row written), and awaited, so it is done before GitLab hears "taken".
    try {
      if (!await hooks.gitlab(action)) return json({ ok: true, ignored: true }, 202);
    } catch (error) {
      console.error(`lvmh: GitLab ${action.kind} on ${action.repo}: ${(error as Error).message}`);
    }
    return json({ ok: true }, 202);
  },
};
