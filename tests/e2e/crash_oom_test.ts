/**
 * An OOM kill on the real engine: a spawned session (stub bridge) with `LVMH_WORKER_MEMORY=64m` is asked to
 * allocate until the kernel kills it. The session becomes `crashed` with reason `oom` and exit code 137, a
 * `session.crashed` webhook goes out once, its logs stay readable after its container was removed, and a
 * resume brings it back online on its kept storage with its seqs going on.
 */
import assert from "node:assert/strict";
import { waitFor } from "../../testing/daemon.ts";
import { dockerTest } from "../../testing/docker.ts";
import { post, startSpawnEnv } from "../../testing/spawn_env.ts";
import { startReceiver } from "../../testing/fixtures/webhook_receiver.ts";
import { generateSecret } from "../../lib/webhooks/signing.ts";

type Session = {
  id: string;
  online: boolean;
  container: string | null;
  exitCode?: number;
  reason?: string;
  lastSeq: number;
};

dockerTest(
  "crash: an OOM-killed worker is crashed (oom), announced, its logs kept, and resumable",
  async () => {
    const env = await startSpawnEnv({ env: { LVMH_WORKER_MEMORY: "64m" } });
    const secret = generateSecret();
    const receiver = startReceiver({ secret });
    const { d, engine } = env;
    try {
      const hook = await post(d, "/api/webhooks", { url: receiver.url, events: ["session.crashed"], secret });
      assert.equal(hook.status, 201, await hook.text());
      await post(d, "/api/gitlab/connect", { token: env.pat }).then((r) => r.body?.cancel());
      const spawned = await (await post(d, "/api/spawn", { repo: env.repos[0], ask: [] })).json();
      const id = spawned.sessionId as string;
      const session = async () =>
        ((await (await d.api("/api/sessions")).json()) as Session[]).find((s) => s.id === id)!;
      await waitFor(async () => (await session())?.online, "the hello", 60_000);
      await post(d, `/api/sessions/${id}/prompt`, { message: "hello" }).then((r) => r.body?.cancel());
      await waitFor(async () => (await session()).lastSeq >= 5, "the echo", 30_000);
      const before = (await session()).lastSeq;

      await post(d, `/api/sessions/${id}/prompt`, { message: "ALLOCATE" }).then((r) => r.body?.cancel());
      const crashed = await waitFor(
        async () => {
          const s = await session();
          return s.container === "crashed" ? s : null;
        },
        "crashed",
        60_000,
      );
      assert.deepEqual([crashed.reason, crashed.exitCode, crashed.online], ["oom", 137, false]);
      assert.deepEqual(await engine.containerList({ "lvmh.session": id, "lvmh.kind": "worker" }), []);
      const logs = await d.api(`/api/sessions/${id}/container/logs?tail=10`);
      assert.equal(logs.status, 200);
      await logs.body?.cancel();
      const crashedHooks = () =>
        receiver.received.filter((r) => r.body.type === "session.crashed" && r.status === 200);
      const delivered = await waitFor(
        () => crashedHooks().length ? crashedHooks() : null,
        "the webhook",
        30_000,
      );
      assert.equal(delivered.length, 1);
      assert.ok(delivered[0].verified);
      assert.deepEqual([delivered[0].body.sessionId, delivered[0].body.data.reason], [id, "oom"]);

      const res = await post(d, `/api/sessions/${id}/resume`, {});
      assert.equal(res.status, 202, await res.text());
      await waitFor(async () => (await session()).online, "the hello after the crash", 60_000);
      await post(d, `/api/sessions/${id}/prompt`, { message: "again" }).then((r) => r.body?.cancel());
      await waitFor(async () => (await session()).lastSeq > before + 1, "an echo after resume", 30_000);
      const s = await session();
      assert.equal(s.container, "running");
      assert.equal(crashedHooks().length, 1, "announced once");
    } finally {
      await receiver.close();
      await env.close();
    }
  },
);
