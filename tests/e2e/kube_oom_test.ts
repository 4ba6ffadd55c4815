/**
 * An OOM kill on Kubernetes, end to end: the real daemon against the fake API server whose Docker kubelet
 * runs the real worker image with the Pod's memory limit (`LVMH_WORKER_MEMORY`). The fake LLM makes pi run a
 * bash command that takes memory past that limit; the kernel kills the worker, the kubelet reports
 * `OOMKilled`, and the session becomes `crashed` with reason `oom`; its logs stay readable after its Pod was
 * removed, and a resume brings it back online on its kept claim.
 */
import assert from "node:assert/strict";
import { waitFor } from "../../testing/daemon.ts";
import { dockerTest } from "../../testing/docker.ts";
import { post } from "../../testing/spawn_env.ts";
import { startKubeSpawnEnv } from "../../testing/kube_env.ts";

type Session = {
  id: string;
  online: boolean;
  container: string | null;
  exitCode?: number;
  reason?: string;
};

dockerTest(
  "kubernetes: a worker killed for memory is crashed (oom), its logs kept, and resumable",
  async () => {
    const s = await startKubeSpawnEnv({ LVMH_WORKER_MEMORY: "384m" });
    const { env, fake } = s;
    const { d } = env;
    try {
      const spawned = await post(d, "/api/spawn", { repo: env.repos[0], ask: [] });
      const id = (await spawned.json()).sessionId as string;
      assert.equal(spawned.status, 201);
      const session = async () =>
        ((await (await d.api("/api/sessions")).json()) as Session[]).find((s) => s.id === id);
      await waitFor(async () => (await session())?.online, "the hello", 120_000).catch((error) => {
        throw new Error(`${error.message}\ndaemon:\n${d.output()}`);
      });
      const pod = fake.get("pods", `lvmh-w-${id}`)!;
      const limits = (pod.spec as { containers: { resources?: { limits?: { memory?: string } } }[] })
        .containers[0].resources?.limits;
      assert.equal(limits?.memory, "384Mi", "LVMH_WORKER_MEMORY is the worker's limit");

      const res = await post(d, `/api/sessions/${id}/prompt`, { message: "OOMTOOL" });
      assert.equal(res.status, 200, await res.text());
      const crashed = await waitFor(
        async () => {
          const s = await session();
          return s?.container === "crashed" ? s : null;
        },
        "crashed",
        120_000,
      ).catch(async (error) => {
        const events = await (await d.api(`/api/sessions/${id}/events`)).text();
        const status = JSON.stringify(fake.get("pods", `lvmh-w-${id}`)?.status);
        throw new Error(
          `${error.message}\nevents: ${events.slice(-3000)}\npod: ${status}\ndaemon:\n${d.output()}`,
        );
      });
      assert.deepEqual([crashed.reason, crashed.exitCode, crashed.online], ["oom", 137, false]);
      await waitFor(() => !fake.get("pods", `lvmh-w-${id}`), "the ended Pod removed", 30_000);
      assert.ok(fake.get("persistentvolumeclaims", `lvmh-ws-${id}`), "the claim is kept");
      const logs = await d.api(`/api/sessions/${id}/container/logs?tail=50`);
      assert.equal(logs.status, 200);
      assert.match(await logs.text(), /lvmh-bridge/);

      const resumed = await post(d, `/api/sessions/${id}/resume`, {});
      assert.equal(resumed.status, 202, await resumed.text());
      await waitFor(async () => (await session())?.online, "the hello after the crash", 120_000);
      assert.equal((await session())?.container, "running");
    } finally {
      await s.close();
    }
  },
);
