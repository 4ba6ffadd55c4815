/**
 * The daemon's own image, run the way compose.yaml runs it: built from ./Dockerfile by the docker CLI (the
 * base image is the offline test base, which has npm like node:22-bookworm-slim; the RUN steps fetch Deno and
 * the npm packages from the registry), then started with the engine socket mounted and a data volume. Inside,
 * it builds the worker image from its own copy of the bridge and plugin and spawns a session that says hello
 * as an agent; `docker restart` keeps the sessions and the worker reconnects; `docker stop` exits 0.
 * Host networking stands in for compose's published port: the test engine has no bridge network.
 */
import assert from "node:assert/strict";
import { bearerFetch, type Daemon, freePort, TEST_TOKEN, waitFor } from "../../testing/daemon.ts";
import { DOCKER_SOCK, dockerTest, ensureBaseImage, ROOT, uniq } from "../../testing/docker.ts";
import { post, startSpawnEnv } from "../../testing/spawn_env.ts";
import { modelsJson } from "../../testing/pi.ts";
import { startFakeLlm } from "../../testing/fixtures/fake_llm.mjs";

type Session = { id: string; online: boolean; agent: boolean; repo: string | null; model: string | null };
type ContainerDaemon = Daemon & { name: string };

/** Run the docker CLI against the test engine; throws with its stderr when it fails. */
async function docker(...args: string[]): Promise<string> {
  const out = await new Deno.Command("docker", {
    args,
    env: { DOCKER_HOST: `unix://${DOCKER_SOCK}` },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`docker ${args[0]} failed:\n${text.slice(-4000)}`);
  return text;
}

/** Exit code of a stopped container. */
async function exitCode(name: string): Promise<number> {
  return Number((await docker("inspect", "--format", "{{.State.ExitCode}}", name)).trim());
}

/** Count the daemon's start-up lines in the container's output. */
async function starts(name: string): Promise<number> {
  return (await docker("logs", name)).split("lvmh listening on").length - 1;
}

/** Start `image` as the daemon with the engine socket at /var/run/docker.sock and `volume` at /data. */
async function startDaemonContainer(
  image: string,
  volume: string,
  env: Record<string, string>,
): Promise<ContainerDaemon> {
  const name = `lvmh-test-daemon-${uniq()}`;
  const port = freePort();
  const vars = {
    ...env,
    LVMH_TOKEN: TEST_TOKEN,
    LVMH_HOST: "127.0.0.1",
    LVMH_PORT: String(port),
    LVMH_CONTAINER_DOCKER_SOCK: "/var/run/docker.sock",
  };
  await docker(
    "run",
    "--detach",
    "--name",
    name,
    "--label",
    "lvmh.test=daemon",
    "--network",
    "host",
    "--volume",
    `${DOCKER_SOCK}:/var/run/docker.sock`,
    "--volume",
    `${volume}:/data`,
    ...Object.entries(vars).flatMap(([k, v]) => ["--env", `${k}=${v}`]),
    image,
  );
  let output = "";
  await waitFor(
    async () => (output = await docker("logs", name)).includes("lvmh listening on"),
    "listening",
    60_000,
  )
    .catch((e) => {
      throw new Error(`${e.message}\n${output}`);
    });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    await docker("rm", "--force", name).catch(() => {});
  };
  return {
    name,
    port,
    token: TEST_TOKEN,
    dataDir: "/data",
    url,
    agentUrl: `ws://127.0.0.1:${port}/agent/ws`,
    browserUrl: `ws://127.0.0.1:${port}/ws?token=${TEST_TOKEN}`,
    output: () => output,
    api: bearerFetch(url, TEST_TOKEN),
    async kill(signal = "SIGTERM") {
      await docker("kill", "--signal", signal, name).catch(() => {});
      await docker("wait", name);
      const code = await exitCode(name);
      return { success: code === 0, code, signal: null };
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

dockerTest(
  "the daemon's Dockerfile builds an image that serves, spawns, restarts and stops cleanly",
  async (t) => {
    await ensureBaseImage();
    const id = uniq();
    const daemonImage = `lvmh-test-daemon-${id}:latest`;
    const workerImage = `lvmh-test-indaemon-worker-${id}:latest`;
    const volume = `lvmh-test-data-${id}`;
    const llm = await startFakeLlm();
    const dir = await Deno.makeTempDir({ prefix: "lvmh-daemon-image-" });
    let daemon = null as ContainerDaemon | null; // set by startSpawnEnv's callback
    try {
      await t.step("docker build", async () => {
        await docker(
          "build",
          "--network",
          "host",
          "--build-arg",
          "BASE_IMAGE=lvmh-node-base:latest",
          "--tag",
          daemonImage,
          ROOT,
        );
      });

      await Deno.writeTextFile(`${dir}/models.json`, modelsJson(llm.url));
      const env = await startSpawnEnv({
        workerImage,
        env: { LVMH_MODELS_JSON: `${dir}/models.json` },
        daemon: async (env) => daemon = await startDaemonContainer(daemonImage, volume, env),
      });
      const d = env.d;
      const sessions = async () => (await (await d.api("/api/sessions")).json()) as Session[];
      try {
        let sessionId = "";
        await t.step("it builds the worker from its own files and spawns a session", async () => {
          await post(d, "/api/gitlab/connect", { token: env.pat }).then((r) => r.body?.cancel());
          const res = await post(d, "/api/spawn", { repo: env.repos[0] });
          const body = await res.json();
          assert.equal(res.status, 201, JSON.stringify(body));
          sessionId = body.sessionId;
          const s = await waitFor(
            async () => (await sessions()).find((x) => x.id === sessionId && x.online),
            "the worker's hello",
            60_000,
          );
          assert.equal(s.agent, true);
          assert.equal(s.repo, env.repos[0]);
          assert.equal(s.model, "fake-model");
        });

        await t.step("docker restart keeps the database in the volume; the worker comes back", async () => {
          await docker("restart", daemon!.name);
          await waitFor(async () => await starts(daemon!.name) === 2, "listening again", 60_000);
          const s = await waitFor(
            async () => (await sessions()).find((x) => x.id === sessionId && x.online),
            "the worker reconnects",
            60_000,
          );
          assert.equal(s.repo, env.repos[0]);
          // The GitLab connection lives in the database: it survived in the volume.
          const status = await (await d.api("/api/gitlab/status")).json();
          assert.equal(status.connected, true);
        });

        await t.step("docker stop ends it with exit code 0", async () => {
          await docker("stop", "--time", "10", daemon!.name);
          assert.equal(await exitCode(daemon!.name), 0);
        });
      } finally {
        await env.close();
      }
    } finally {
      await daemon?.stop();
      await docker("volume", "rm", "--force", volume).catch(() => {});
      await docker("image", "rm", "--force", daemonImage, workerImage).catch(() => {});
      await llm.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
);
