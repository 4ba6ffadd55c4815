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
import { asRunner, type HelperRunner, lastLines } from "./helper.ts";
import { CHANGES_SCRIPT, changesScriptArgs, newBoundary } from "../lib/changes/mod.ts";
import type { ChangeScope } from "../lib/changes/types.ts";

export interface DiffHelperOptions {
  /** The session whose working copy is read (with a runner). */
  sessionId?: string;
  /** With an engine: the image and the session's working-copy volume (`workVolumeName(sessionId)`). */
  image?: string;
  volume?: string;
  scope: ChangeScope;
  /** The recorded base of the working copy (`scope: "all"` compares with it). */
  base: { sha: string; branch: string };
  labels?: Labels;
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
 * @throws {HelperError} when the script failed (its stderr is in the message) or ran past the timeout;
 *   {Error} when it printed no outputs; {DockerError} when the engine refuses (a missing volume or image).
 */
export async function runDiffHelper(
  engine: Engine | HelperRunner,
  o: DiffHelperOptions,
): Promise<DiffHelperOutput> {
  const boundary = newBoundary();
  const { stdout, stderr } = await asRunner(engine, o).run({
    kind: "diff",
    cmd: [WRAP, "lvmh-diff", CHANGES_SCRIPT, "lvmh-changes", ...changesScriptArgs(boundary, o.scope, o.base)],
    workingCopy: { sessionId: o.sessionId ?? "", readOnly: true },
    network: false,
    secret: null,
    env: ["HOME=/tmp", "TMPDIR=/tmp"],
    workingDir: "/workspace",
    timeoutMs: o.timeoutMs ?? DIFF_HELPER_TIMEOUT_MS,
    failure: "git failed in the diff helper",
  });
  const output = new TextDecoder().decode(Buffer.from(stdout.replace(/\s+/g, ""), "base64"));
  if (!output.includes(boundary)) {
    throw new Error(`git printed nothing in the diff helper: ${lastLines(stderr) || "(no message)"}`);
  }
  return { output, boundary };
}
