/**
 * Test helper: a session's working copy on a Docker volume, made the way a spawn makes one (a clone of the
 * project on the session's own branch, `origin` the GitLab URL) without a spawn, and the agent's hand in it
 * (a script run in the copy, as the worker would, with the volume read-write and no network).
 */
import type { Engine } from "../docker/engine.ts";
import { runHelper } from "../docker/helper.ts";
import { git } from "./fixtures/git_http.ts";

/** Every branch and tag of the bare repository `bare`, as a bundle. */
export async function bundleOf(bare: string): Promise<Uint8Array> {
  const tmp = await Deno.makeTempDir({ prefix: "lvmh-bundle-" });
  try {
    await git(["--git-dir", bare, "bundle", "create", `${tmp}/repo.bundle`, "--all"]);
    return await Deno.readFile(`${tmp}/repo.bundle`);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
}

/**
 * Fill `volume` with a clone of `bundle` on branch `branch` at its default head, origin `url`; then run
 * `agent` in it (its positional parameters are `args`).
 */
export async function fillWorkingCopy(
  engine: Engine,
  o: {
    image: string;
    volume: string;
    bundle: Uint8Array;
    branch: string;
    url: string;
    agent?: string;
    args?: string[];
  },
): Promise<void> {
  await runHelper(engine, {
    image: o.image,
    kind: "test-fill",
    cmd: [
      `set -eu
git clone -q /tmp/repo.bundle /workspace/
cd /workspace
git checkout -q -b "$1"
git remote set-url origin "$2"
git config user.name agent; git config user.email agent@agent.invalid
shift 2
${o.agent ?? ":"}`,
      "fill",
      o.branch,
      o.url,
      ...(o.args ?? []),
    ],
    labels: { "lvmh.test": "work-copy" },
    network: "none",
    mounts: [{ Type: "volume", Source: o.volume, Target: "/workspace" }],
    stdin: null,
    files: { dir: "/tmp", entries: [{ path: "repo.bundle", data: o.bundle }] },
    failure: "filling the working copy failed",
  });
}

/** Run `script` in the working copy on `volume` as the agent would (read-write, no network). */
export async function agentDoes(
  engine: Engine,
  image: string,
  volume: string,
  script: string,
  args: string[] = [],
): Promise<{ stdout: string; stderr: string }> {
  return await runHelper(engine, {
    image,
    kind: "test-agent",
    cmd: [`set -eu\ncd /workspace\n${script}`, "agent", ...args],
    labels: { "lvmh.test": "work-copy" },
    network: "none",
    mounts: [{ Type: "volume", Source: volume, Target: "/workspace" }],
    stdin: null,
    failure: "the agent's step failed",
  });
}
