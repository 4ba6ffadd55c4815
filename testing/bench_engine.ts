/**
 * The Docker engine a benchmark runs on: the one `LVMH_TEST_DOCKER_SOCK` names, or a throwaway one that
 * `scripts/dockerd.sh` starts (and `release()` stops). Call it before importing `testing/docker.ts` or
 * `testing/spawn_env.ts`: they read the socket's path when they load.
 */
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

async function dockerd(action: "start" | "stop"): Promise<string> {
  const out = await new Deno.Command("bash", {
    args: ["scripts/dockerd.sh", action],
    cwd: ROOT,
    stdout: "piped",
    stderr: "inherit",
  }).output();
  if (!out.success) throw new Error(`scripts/dockerd.sh ${action} failed`);
  return new TextDecoder().decode(out.stdout).trim();
}

/**
 * Make sure an engine answers at `LVMH_TEST_DOCKER_SOCK`.
 * @returns `release()`, which stops the engine if this call started it (never throws)
 * @throws {Error} when no engine was named and none could be started
 */
export async function benchEngine(): Promise<{ release(): Promise<void> }> {
  if (Deno.env.get("LVMH_TEST_DOCKER_SOCK")) return { release: () => Promise.resolve() };
  Deno.env.set("LVMH_TEST_DOCKER_SOCK", await dockerd("start"));
  return { release: () => dockerd("stop").then(() => {}, () => {}) };
}
