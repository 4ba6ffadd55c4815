import { json } from "../../lib/http.ts";
import { ForbiddenError, NotFoundError } from "../../lib/errors.ts";
import type { Handlers } from "../../lib/router.ts";

/**
 * The GitLab token for a Kubernetes worker's init container, which clones the session's working copy: only
 * for that session's own token, only while it clones, and only once (`lib/spawn/kube_backend.ts`). The value
 * is never logged nor audited; `credential` is null for an anonymous clone.
 */
export const handler: Handlers = {
  GET(ctx) {
    if (ctx.principal?.via !== "agent") {
      throw new ForbiddenError("only a spawned session's own token may clone");
    }
    const given = ctx.app.spawner.cloneCredential?.(ctx.principal.sessionId) ?? null;
    if (!given) throw new NotFoundError(`Session "${ctx.principal.sessionId}" is not cloning`);
    return json({ credential: given.credential });
  },
};
