/**
 * Kept hook prompts across replicas: two daemon processes on one real PostgreSQL database, their Docker
 * engine the fake engine served on a unix socket from this process (it outlives a daemon, as containers do),
 * this test playing each spawned session's plugin (feature `prompt_once`, answering with `command_result`).
 *
 * 1. A spawn hook taken by replica A: A keeps the prompt in the shared log, claims it, starts the worker and
 *    waits for the session; A is SIGKILLed before the plugin connected. The plugin says hello to B: once A's
 *    lease ran out, B claims the prompt and delivers it, exactly once.
 * 2. Both up: a spawn hook on A, the session's plugin on the replica that does not hold the prompt's lease:
 *    delivered once, through the command queue, with the plugin's features read from the session row.
 * 3. The prompt's replica SIGKILLed mid-spawn (the worker's clone held): the other takes the prompt on once the
 *    lease ran out, spawns again under the same session id (one worker in the end) and delivers once.
 *
 * "Once" is counted at the plugin (frames carrying the promptId, and nothing more before a later marker
 * prompt), in the shared audit log (`hook.prompt` rows) and in the stored `command_result`s.
 */
import assert from "node:assert/strict";
import { postgresBinDir, startPostgres } from "../../testing/postgres.ts";
import { startReplicas } from "../../testing/replicas.ts";
import { bearerFetch, waitFor } from "../../testing/daemon.ts";
import { type AgentClient, connectAgent } from "../../testing/agent.ts";
import { deferred, FakeEngine } from "../../lib/spawn/_fake_engine.ts";
import { connectPostgres } from "../../lib/storage/pg_client.ts";
import { Feature } from "../../lib/wire.ts";

const HAVE_POSTGRES = (await postgresBinDir()) !== null;
const IMAGE = "lvmh-worker:hooks-replicas";
/** Short, so a SIGKILLed replica's claim runs out within the test. */
const LEASE_SECONDS = 2;

Deno.test({
  name: "replicas: a kept hook prompt survives its replica's SIGKILL and is delivered once by another",
  ignore: !HAVE_POSTGRES,
  fn: async () => {
    await using pg = await startPostgres();
    const url = await pg.newDatabase();
    const dir = await Deno.makeTempDir({ prefix: "lvmh-hooks-replicas-" });
    const fake = new FakeEngine();
    fake.images.set(IMAGE, null); // no lvmh label: used as it is, no build
    const engine = Deno.serve({ path: `${dir}/docker.sock`, onListen() {} }, fake.handle);
    const sql = connectPostgres(url, { max: 1 });
    const agents: AgentClient[] = [];
    try {
      await using replicas = await startReplicas(2, {
        databaseUrl: url,
        env: {
          LVMH_CONTAINER_DOCKER_SOCK: `${dir}/docker.sock`,
          LVMH_WORKER_IMAGE: IMAGE,
          LVMH_SPAWN_ASK: "bash",
          LVMH_HOOK_LEASE_SECONDS: String(LEASE_SECONDS),
        },
      });
      const [a, b] = replicas.replicas;
      const apiA = bearerFetch(a.url, replicas.token);
      const apiB = bearerFetch(b.url, replicas.token);
      const workers = (sessionId: string) => fake.find({ "lvmh.session": sessionId, "lvmh.kind": "worker" });
      const kept = async () =>
        await sql`SELECT id, session_id, spawn, lease_owner FROM hook_prompts` as unknown as {
          id: string;
          session_id: string;
          spawn: string | null;
          lease_owner: string | null;
        }[];
      const spawnHook = async (message: string) => {
        const res = await apiA("/hooks/generic", {
          method: "POST",
          body: JSON.stringify({ message, spawn: { repo: "group/proj" } }),
        });
        assert.equal(res.status, 202, await res.clone().text());
        return (await res.json()).sessionId as string;
      };
      /** The plugin of `sessionId` on replica `on`. */
      const pluginOn = async (on: { port: number }, sessionId: string) => {
        const agent = await connectAgent(
          { agentUrl: `ws://127.0.0.1:${on.port}/agent/ws`, token: replicas.token },
          { sessionId, hello: { features: [Feature.promptOnce] } },
        );
        agents.push(agent);
        return agent;
      };
      const answerPrompt = async (agent: AgentClient, message: RegExp) => {
        const p = await agent.waitFrame(
          (f) => f.type === "prompt" && message.test(String(f.message)),
          "the prompt",
        );
        agent.send("command_result", { commandId: p.promptId, ok: true });
        return p.promptId as string;
      };
      /** Exactly once: the next prompt after the hook's is a person's marker, and one of each record. */
      const deliveredOnce = async (agent: AgentClient, sessionId: string, promptId: string, api = apiB) => {
        await waitFor(async () => (await kept()).length === 0, "the answered prompt's row is gone");
        const res = await api(`/api/sessions/${sessionId}/prompt`, {
          method: "POST",
          body: JSON.stringify({ message: `marker for ${sessionId}` }),
        });
        assert.equal(res.status, 200, await res.clone().text());
        await res.body?.cancel();
        await agent.waitFrame(
          (f) => f.type === "prompt" && f.message === `marker for ${sessionId}`,
          "marker",
        );
        const frames = agent.frames.filter((f) => f.type === "prompt" && f.promptId === promptId);
        assert.equal(frames.length, 1, "the plugin got the hook's prompt once");
        const audit = await (await api("/api/audit?limit=1000")).json() as {
          action: string;
          detail: Record<string, unknown>;
        }[];
        const sends = audit.filter((r) => r.action === "hook.prompt" && r.detail.promptId === promptId);
        assert.equal(sends.length, 1, "one hook.prompt in the shared audit log");
        const [{ n }] = await sql`SELECT count(*)::int AS n FROM events
          WHERE session_id = ${sessionId} AND type = 'command_result' AND payload LIKE ${`%${promptId}%`}`;
        assert.equal(n, 1, "one stored answer");
      };

      // 1. Taken by A, whose worker started; A dies before the session's plugin connects.
      const s1 = await spawnHook("fix the nightly build");
      await waitFor(
        async () =>
          (await kept()).some((r) => r.session_id === s1 && r.spawn === null && r.lease_owner === "r0"),
        "A spawned the worker and holds the prompt",
      );
      assert.equal(workers(s1).length, 1);
      assert.equal((await a.kill("SIGKILL")).signal, "SIGKILL");
      const p1 = await pluginOn(b, s1);
      const id1 = await answerPrompt(p1, /nightly build/);
      await deliveredOnce(p1, s1, id1);
      assert.equal(workers(s1).length, 1, "B did not spawn the worker again");

      // 2. Both up: the session's plugin on the replica that does not hold the prompt (A, which took the hook,
      // claims it at once; B's sweep may be quicker), so the holder of the prompt is not the session's holder.
      await a.restart();
      const s2 = await spawnHook("add a changelog entry");
      const owner = (await waitFor(
        async () => (await kept()).find((r) => r.session_id === s2 && r.spawn === null && r.lease_owner),
        "the worker of the second session started",
      )).lease_owner;
      const p2 = await pluginOn(owner === "r0" ? b : a, s2);
      const id2 = await answerPrompt(p2, /changelog entry/);
      await deliveredOnce(p2, s2, id2);

      // 3. The prompt's replica SIGKILLed mid-spawn (its worker's clone held): the survivor takes the prompt on,
      // spawns again under the session's id, and delivers once.
      const cloning = deferred();
      const held = deferred();
      fake.onClone = () => (cloning.resolve(), held.promise);
      const s3 = await spawnHook("update the lock file");
      await cloning.promise;
      const [row3] = (await kept()).filter((r) => r.session_id === s3);
      assert.ok(row3.spawn !== null && row3.lease_owner, "the spawn is under way, under a lease");
      const [dying, survivor] = row3.lease_owner === "r0" ? [a, b] : [b, a];
      assert.equal((await dying.kill("SIGKILL")).signal, "SIGKILL");
      fake.onClone = () => Promise.resolve();
      held.resolve();
      await waitFor(
        async () => (await kept()).some((r) => r.session_id === s3 && r.spawn === null),
        "the survivor spawned again",
        20_000,
      );
      assert.equal(workers(s3).length, 1, "one worker for the session");
      const p3 = await pluginOn(survivor, s3);
      const id3 = await answerPrompt(p3, /lock file/);
      await deliveredOnce(p3, s3, id3, bearerFetch(survivor.url, replicas.token));
    } finally {
      for (const agent of agents) await agent.close();
      await sql.end();
      await engine.shutdown();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
