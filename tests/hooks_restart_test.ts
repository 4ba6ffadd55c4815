/**
 * Hook state survives a SIGKILL of the daemon process: a GitLab delivery handled before the kill is still
 * recognised as a replay after the restart, and a hook secret set through the API still guards the route.
 */
import assert from "node:assert/strict";
import { startDaemon } from "../testing/daemon.ts";
import { failedPipeline } from "../testing/fixtures/gitlab_hooks/payloads.ts";

Deno.test("hooks: delivery keys and the API-set secret survive SIGKILL", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-hooks-restart-" });
  const secret = "gitlab-hook-secret-survives-1";
  const deliver = (url: string, uuid: string) =>
    fetch(`${url}/hooks/gitlab`, {
      method: "POST",
      headers: {
        "x-gitlab-event": "Pipeline Hook",
        "x-gitlab-token": secret,
        "x-gitlab-event-uuid": uuid,
        "content-type": "application/json",
      },
      body: JSON.stringify(failedPipeline("main")),
    });
  try {
    const first = await startDaemon({ dataDir });
    try {
      const put = await first.api("/api/hooks/gitlab", { method: "PUT", body: JSON.stringify({ secret }) });
      assert.equal(put.status, 200);
      await put.body?.cancel();
      const res = await deliver(first.url, "uuid-before-kill");
      assert.equal(res.status, 202);
      assert.equal((await res.json()).duplicate, undefined);
      assert.equal((await first.kill("SIGKILL")).signal, "SIGKILL");
    } finally {
      await first.stop();
    }
    await using second = await startDaemon({ dataDir, port: first.port });
    const replay = await deliver(second.url, "uuid-before-kill");
    assert.equal(replay.status, 202);
    assert.equal((await replay.json()).duplicate, true, "the replay is recognised after the restart");
    const fresh = await deliver(second.url, "uuid-after-restart");
    assert.equal((await fresh.json()).duplicate, undefined);
    const wrong = await fetch(`${second.url}/hooks/gitlab`, {
      method: "POST",
      headers: { "x-gitlab-event": "Pipeline Hook", "x-gitlab-token": "not-the-secret" },
      body: "{}",
    });
    assert.equal(wrong.status, 401, "the stored secret still guards the route");
    await wrong.body?.cancel();
  } finally {
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
