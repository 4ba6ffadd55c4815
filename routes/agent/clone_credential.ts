import { json } from "../../lib/http.ts";
import { NotFoundError } from "../../lib/errors.ts";
import type { Handlers } from "../../lib/router.ts";

/**
 * The GitLab token for a Kubernetes worker's init container, which clones the session's working copy: only
 * for that session's own token, only while it clones, and only once (`lib/spawn/kube_backend.ts`). A helper
 * Pod (the push) presents a token of its own one-off id and gets its inputs the same way, with the files it
 * needs. The value is never logged nor audited; `credential` is null for an anonymous clone.
 */
export const handler: Handlers = {
  GET(ctx) {
    // Only a session-scoped token names a session; any other caller (an admin, a laptop's agent token) has no
    // clone waiting for it.
    const sessionId = ctx.principal?.via === "agent" ? ctx.principal.sessionId : null;
    const given = sessionId === null ? null : ctx.app.spawner.cloneCredential?.(sessionId) ?? null;
    if (!given) throw new NotFoundError("No clone of this token's session is waiting for a credential");
    return json({ credential: given.credential, ...(given.files ? { files: given.files } : {}) });
  },
};
