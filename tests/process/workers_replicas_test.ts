/**
 * Spawned sessions' workers with two daemon processes on one real PostgreSQL database (issue 23), both on one
 * Kubernetes "cluster": the fake API server (testing/fixtures/kube_api.ts, its scriptable kubelet playing the
 * Pods' lives), which every replica reaches as they reach a real API server. A worker spawned through A is
 * listed with its state on B; a stop through B stops it once and both list it stopped; a resume through B
 * runs it again; a stop sent to A and B at once deletes its Pod once; a discard sent to both at once removes
 * its storage once; and a worker whose replica was SIGKILLed is still watched: its OOM kill is seen by the
 * other (the leader) and listed on it.
 */
import assert from "node:assert/strict";
import { startPostgres } from "../../testing/postgres.ts";
import { type Daemon, waitFor } from "../../testing/daemon.ts";
import { connectAgent, connectBrowser, sessionInfo } from "../../testing/agent.ts";
import { startReplicas } from "../../testing/replicas.ts";
import { startFakeKube } from "../../testing/fixtures/kube_api.ts";
import { running } from "../../lib/spawn/_kube_test_env.ts";
import { claimName, podName } from "../../lib/kube/objects.ts";

/** Another replica's move is read within a second; the leader's watch runs every 5 s. Room for a slow CI. */
const SEEN_MS = 20_000;

type Listed = {
  id: string;
  online: boolean;
  container: string | null;
  exitCode?: number | null;
  reason?: string | null;
};

async function listed(d: Daemon, id: string): Promise<Listed | undefined> {
  const rows = await (await d.api("/api/sessions")).json() as Listed[];
  return rows.find((s) => s.id === id);
}

async function lists(d: Daemon, id: string, state: string, name: string): Promise<void> {
  await waitFor(async () => (await listed(d, id))?.container === state, `${name} lists ${state}`, SEEN_MS);
}

const call = async (d: Daemon, path: string, method: string) => {
  const res = await d.api(path, { method, ...(method === "POST" ? { body: "{}" } : {}) });
  await res.body?.cancel();
  return res.status;
};

Deno.test("replicas: every worker's state is shared; stop, resume and discard act once", async (t) => {
  await using pg = await startPostgres();
  const databaseUrl = await pg.newDatabase();
  const fake = await startFakeKube({ kubelet: "script", bookmarkMs: 200 });
  try {
    await using set = await startReplicas(2, { databaseUrl, env: fake.daemonEnv() });
    const [a, b] = set.replicas.map((r) => r.daemon());
    const deletes = (id: string) =>
      fake.requests.filter((r) =>
        r.method === "DELETE" && r.url.split("?")[0].endsWith(`/pods/${podName(id)}`)
      )
        .length;

    /** Spawn through A, the Pod runs, the worker's plugin says hello (to A): the session is everyone's. */
    const spawnOnA = async () => {
      const res = await a.api("/api/spawn", { method: "POST", body: JSON.stringify({ repo: "group/proj" }) });
      assert.equal(res.status, 201, await res.clone().text());
      const { sessionId: id } = await res.json() as { sessionId: string };
      fake.setPodStatus(podName(id), running(id));
      await lists(a, id, "running", "A");
      const plugin = await connectAgent(a, { sessionId: id, session: sessionInfo(id) });
      return { id, plugin };
    };

    let id = "";
    await t.step("a worker spawned through A is listed with its state on B", async () => {
      const spawned = await spawnOnA();
      id = spawned.id;
      await lists(b, id, "running", "B");
      await spawned.plugin.close();
    });

    await t.step(
      "a stop through B stops the worker once; both list it stopped, A's browser live",
      async () => {
        const browser = await connectBrowser(a.browserUrl);
        try {
          await browser.waitSessions(
            (m) => m.get(id)?.container === "running",
            "A's browser: running",
            SEEN_MS,
          );
          assert.equal(await call(b, `/api/sessions/${id}/container`, "DELETE"), 200);
          await browser.waitSessions(
            (m) => m.get(id)?.container === "stopped",
            "A's browser: stopped",
            SEEN_MS,
          );
        } finally {
          await browser.close();
        }
        assert.equal(fake.get("pods", podName(id)), undefined, "the Pod is gone");
        assert.ok(fake.get("persistentvolumeclaims", claimName(id)), "the storage stays");
        assert.equal(deletes(id), 1);
        await lists(a, id, "stopped", "A");
        await lists(b, id, "stopped", "B");
      },
    );

    await t.step("a resume through B runs it again, listed running on A", async () => {
      const resumed = b.api(`/api/sessions/${id}/resume`, { method: "POST", body: "{}" });
      await waitFor(() => fake.get("pods", podName(id)) !== undefined, "the new Pod", SEEN_MS);
      fake.setPodStatus(podName(id), running(id, "lvmh: kept"));
      const res = await resumed;
      assert.equal(res.status, 202, await res.clone().text());
      await res.body?.cancel();
      await lists(a, id, "running", "A");
      await lists(b, id, "running", "B");
    });

    await t.step("a stop sent to A and B at once deletes the Pod once", async () => {
      const before = deletes(id);
      const statuses = await Promise.all(
        [a, b].map((d) => call(d, `/api/sessions/${id}/container`, "DELETE")),
      );
      assert.deepEqual(statuses.sort(), [200, 404], "one stops it, the other finds it stopped");
      assert.equal(deletes(id) - before, 1, "one DELETE of the Pod");
      assert.equal(fake.get("pods", podName(id)), undefined);
      await lists(a, id, "stopped", "A");
      await lists(b, id, "stopped", "B");
    });

    await t.step("a discard sent to A and B at once removes the storage once", async () => {
      const claimDeletes = () =>
        fake.requests.filter((r) =>
          r.method === "DELETE" && r.url.split("?")[0].endsWith(`/persistentvolumeclaims/${claimName(id)}`)
        ).length;
      for (const d of [a, b]) {
        await waitFor(async () => (await listed(d, id))?.online === false, "the session offline", SEEN_MS);
      }
      const statuses = await Promise.all([a, b].map((d) => call(d, `/api/sessions/${id}`, "DELETE")));
      // The loser finds the worker's row moved (409), or already gone: then it deletes what is left of the
      // session, as a second delete of a session does (200, or 404 once the winner's delete reached it).
      assert.ok(statuses.includes(200) && statuses.every((s) => [200, 404, 409].includes(s)), `${statuses}`);
      assert.equal(claimDeletes(), 1, "one DELETE of the claim");
      await waitFor(
        () => fake.get("persistentvolumeclaims", claimName(id)) === undefined,
        "claim gone",
        SEEN_MS,
      );
      for (const d of [a, b]) {
        await waitFor(async () => (await listed(d, id)) === undefined, "the session gone", SEEN_MS);
      }
    });

    await t.step(
      "spawned through A with its own ask set: B lists it before its hello, welcomes it with that set",
      async () => {
        const res = await a.api("/api/spawn", {
          method: "POST",
          body: JSON.stringify({ repo: "group/proj", ask: ["write"] }),
        });
        assert.equal(res.status, 201, await res.clone().text());
        const { sessionId: own } = await res.json() as { sessionId: string };
        await waitFor(
          async () => (await listed(b, own)) !== undefined,
          "B lists it before its hello",
          SEEN_MS,
        );
        fake.setPodStatus(podName(own), running(own));
        // Behind a load balancer the worker's plugin may reach either replica.
        const plugin = await connectAgent(b, { sessionId: own, session: sessionInfo(own) });
        try {
          assert.deepEqual((plugin.welcome.policy as { ask: unknown }).ask, ["write"]);
        } finally {
          await plugin.close();
        }
        await lists(a, own, "running", "A");
        assert.equal(await call(a, `/api/sessions/${own}/container`, "DELETE"), 200, "stopped: no Pod left");
      },
    );

    await t.step(
      "a worker of a SIGKILLed replica is still watched: its OOM kill is listed on B",
      async () => {
        const spawned = await spawnOnA();
        await lists(b, spawned.id, "running", "B");
        await set.replicas[0].kill("SIGKILL");
        fake.scriptPod(podName(spawned.id), "oomKilled");
        await waitFor(
          async () => (await listed(b, spawned.id))?.container === "crashed",
          "B lists it crashed",
          SEEN_MS,
        );
        const row = await listed(b, spawned.id);
        assert.equal(row?.reason, "oom");
        assert.equal(fake.get("pods", podName(spawned.id)), undefined, "the ended worker was removed");
        assert.deepEqual(fake.list("pods").map((p) => p.metadata.name), []);
      },
    );
  } finally {
    await fake.close();
  }
});
