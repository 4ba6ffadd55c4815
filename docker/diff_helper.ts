/**
 * Read a spawned session's working copy for "what changed" in a short-lived helper container: the worker
 * image, no network and no token, the session's `lvmh-work-<id>` volume mounted read-only at /workspace. It
 * runs lib/changes's one git script (its temporary index and objects live in the helper's own /tmp, since git
 * may not write the read-only copy) and the daemon parses what it printed with lib/changes. An agent can write
 * anything into its `.git/config`; whatever that makes git run stays in this container, which sees nothing
 * but the copy. User input reaches the script only as positional parameters. The helper is removed
 * afterwards, on success, failure or timeout.
 */
import { Buffer } from "node:buffer";
import type { Engine, Labels } from "./engine.ts";
import { WORKER_UID } from "./clone.ts";
import { CHANGES_SCRIPT, changesScriptArgs, newBoundary } from "../lib/changes/mod.ts";
import type { ChangeScope } from "../lib/changes/types.ts";

export interface DiffHelperOptions {
  image: string;
  /** The session's working-copy volume (`workVolumeName(sessionId)`). */
  volume: string;
  scope: ChangeScope;
  /** The recorded base of the working copy (`scope: "all"` compares with it). */
  base: { sha: string; branch: string };
  labels: Labels;
  /** The helper is killed past this (default 60 s). */
  timeoutMs?: number;
}

/** What the helper printed, to be parsed with lib/changes's `changesFromOutput` and this boundary. */
export interface DiffHelperOutput {
  output: string;
  boundary: string;
}

/**
 * Runs the script ($1, its $0 and parameters after it) with its output in base64 on one line. The engine
 * stores a container's output line by line and reads it back slowly per line: a diff of 230,000 lines took
 * 17 s to read back, the same bytes on one line 0.15 s.
 */
const WRAP = `s=$1; shift; sh -c "$s" "$@" | base64 -w 0`;

/** Time a helper may take by default: a working copy with thousands of changed files takes a few seconds. */
export const DIFF_HELPER_TIMEOUT_MS = 60_000;

/**
 * Run the helper to completion and remove it.
 * @throws {Error} when the script failed before printing git's outputs (its stderr is in the message) or ran
 *   past the timeout; {DockerError} when the engine refuses (a missing volume or image: not found).
 */
export async function runDiffHelper(engine: Engine, o: DiffHelperOptions): Promise<DiffHelperOutput> {
  const name = `lvmh-diff-${crypto.randomUUID().slice(0, 12)}`;
  const boundary = newBoundary();
  const id = await engine.containerCreate(name, {
    Image: o.image,
    Entrypoint: ["sh"],
    Cmd: [
      "-c",
      WRAP,
      "lvmh-diff",
      CHANGES_SCRIPT,
      "lvmh-changes",
      ...changesScriptArgs(boundary, o.scope, o.base),
    ],
    User: `${WORKER_UID}:${WORKER_UID}`,
    WorkingDir: "/workspace",
    Env: ["HOME=/tmp", "TMPDIR=/tmp"],
    Labels: { ...o.labels, "lvmh.kind": "diff" },
    Tty: false,
    NetworkDisabled: true,
    HostConfig: {
      NetworkMode: "none",
      Init: true,
      Mounts: [{ Type: "volume", Source: o.volume, Target: "/workspace", ReadOnly: true }],
    },
  });
  try {
    await engine.containerStart(id);
    const timeoutMs = o.timeoutMs ?? DIFF_HELPER_TIMEOUT_MS;
    let code: number;
    try {
      code = await engine.containerWait(id, "not-running", timeoutMs);
    } catch (error) {
      throw new Error(`git did not finish within ${timeoutMs} ms: ${(error as Error).message}`);
    }
    const { stdout, stderr } = await engine.containerLogs(id);
    if (code !== 0) {
      throw new Error(`git failed in the diff helper (exit code ${code}): ${lastLines(stderr)}`);
    }
    const output = new TextDecoder().decode(Buffer.from(stdout.replace(/\s+/g, ""), "base64"));
    if (!output.includes(boundary)) {
      throw new Error(`git printed nothing in the diff helper: ${lastLines(stderr)}`);
    }
    return { output, boundary };
  } finally {
    await engine.containerRemove(id, true).catch(() => {});
  }
}

function lastLines(text: string, n = 3): string {
  return text.trim().split("\n").slice(-n).join(" / ").slice(0, 1000) || "(no message)";
}
