import { SpawnBody } from "../../../lib/protocol.ts";
import { json, readJson } from "../../../lib/http.ts";
import type { Handlers } from "../../../lib/router.ts";

/** Start a pi session in a container on a GitLab repository; answers once the container runs. */
export const handler: Handlers = {
  async POST(ctx) {
    // Parsed before anything runs: a bad repo path or branch is a 400 with no job and no Docker call.
    const body = await readJson(ctx.req, SpawnBody);
    ctx.audit("spawn", { detail: body });
    const { budget, ...spawn } = body;
    const { sessionId, containerId, jobId } = await ctx.app.spawner.spawn(spawn);
    // Set once the session is registered; a plugin already online hears of it in a `policy` frame.
    if (budget !== undefined) await ctx.app.budgets.put(sessionId, budget);
    return json({ sessionId, containerId, jobId }, 201);
  },
};
