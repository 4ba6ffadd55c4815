import assert from "node:assert/strict";
import { createEngine } from "./engine.ts";
import { contextDigest } from "./context.ts";
import { workerCreateBody, workerImageStale } from "./worker.ts";

const spec = {
  image: "lvmh-worker:latest",
  sessionId: "s-1",
  repo: "group/project",
  branch: null,
  workVolume: "lvmh-work-s-1",
  sessionVolume: "lvmh-sess-s-1",
  network: "host",
  agentUrl: "ws://127.0.0.1:8686/agent/ws",
  token: "daemon-token-0123456789",
  providerKey: "zai-key",
  modelsJson: "/etc/models.json",
};

Deno.test("workerCreateBody() carries the container contract", () => {
  const body = workerCreateBody(spec) as {
    Cmd: string[];
    Env: string[];
    Labels: Record<string, string>;
    HostConfig: { NetworkMode: string; Init: boolean; Mounts: Record<string, unknown>[] };
  };
  assert.deepEqual(body.Cmd, ["node", "/bridge/index.mjs"]);
  for (
    const e of [
      "LVMH_URL=ws://127.0.0.1:8686/agent/ws",
      "LVMH_TOKEN=daemon-token-0123456789",
      "LVMH_SESSION_ID=s-1",
      "LVMH_AGENT=1",
      "LVMH_REPO=group/project",
      "ZAI_RENAUD_API_KEY=zai-key",
      "LVMH_MODELS_JSON=/etc/lvmh/models.json",
      "NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt",
    ]
  ) assert.ok(body.Env.includes(e), e);
  assert.deepEqual(body.Labels, {
    "lvmh.managed": "true",
    "lvmh.kind": "worker",
    "lvmh.session": "s-1",
    "lvmh.repo": "group/project",
  });
  assert.equal(body.HostConfig.NetworkMode, "host");
  assert.equal(body.HostConfig.Init, true);
  assert.deepEqual(body.HostConfig.Mounts, [
    { Type: "volume", Source: spec.workVolume, Target: "/workspace" },
    { Type: "volume", Source: spec.sessionVolume, Target: "/pi-sessions" },
    { Type: "bind", Source: "/etc/models.json", Target: "/etc/lvmh/models.json", ReadOnly: true },
  ]);
  const bare = workerCreateBody({ ...spec, providerKey: null, modelsJson: null }) as typeof body;
  assert.ok(!bare.Env.some((e) => e.startsWith("ZAI_RENAUD_API_KEY=") || e.startsWith("LVMH_MODELS_JSON=")));
  assert.equal(bare.HostConfig.Mounts.length, 2);
  assert.ok(
    !("Memory" in bare.HostConfig) && !("NanoCpus" in bare.HostConfig),
    "no limits unless configured",
  );
});

Deno.test("workerCreateBody() sets the configured memory, CPU and process limits", () => {
  const body = workerCreateBody({
    ...spec,
    limits: { memoryBytes: 512 * 1024 ** 2, cpus: 1.5, pids: 256 },
  }) as { HostConfig: Record<string, unknown> };
  assert.equal(body.HostConfig.Memory, 512 * 1024 ** 2);
  assert.equal(body.HostConfig.MemorySwap, 512 * 1024 ** 2);
  assert.equal(body.HostConfig.NanoCpus, 1_500_000_000);
  assert.equal(body.HostConfig.PidsLimit, 256);
});

Deno.test("workerImageStale(): missing or built from other sources → rebuild; foreign images are kept", async () => {
  const digest = await contextDigest();
  const engineWith = (status: number, labels: Record<string, string> | null) =>
    createEngine({
      socketPath: "/test.sock",
      transport: () =>
        Promise.resolve(
          status === 200
            ? Response.json({ Id: "sha256:x", Config: { Labels: labels } })
            : Response.json({ message: "no such image" }, { status }),
        ),
    });
  assert.equal(await workerImageStale(engineWith(404, null), "w:1"), true);
  assert.equal(await workerImageStale(engineWith(200, null), "w:1"), false);
  assert.equal(await workerImageStale(engineWith(200, { "lvmh.test": "stub" }), "w:1"), false);
  const ours = { "lvmh.kind": "worker-image", "lvmh.context": digest };
  assert.equal(await workerImageStale(engineWith(200, ours), "w:1"), false);
  assert.equal(await workerImageStale(engineWith(200, { ...ours, "lvmh.context": "old" }), "w:1"), true);
  await assert.rejects(() => workerImageStale(engineWith(500, null), "w:1"));
});
