/**
 * The `changes` command: what changed in pi's cwd, computed by lib/changes's one git script (the same the
 * daemon's diff helper runs for spawned sessions) and answered in a `command_result` with the same shape.
 * Git only reads: the script stages into a temporary index and object directory, runs hardened (no system or
 * global config, no fsmonitor, hooks, external diff or textconv), and is killed past a timeout. The base is
 * the merge-base with the current branch's upstream, else HEAD; outside a git repository the answer is empty.
 */
import { execFile } from "node:child_process";
import {
  type Changes,
  CHANGES_SCRIPT,
  type ChangeScope,
  changesFromOutput,
  changesScriptArgs,
  HARDENED_GIT_ENV,
  newBoundary,
  PLUGIN_CHANGE_LIMITS,
} from "../../lib/changes/mod.ts";
import process from "node:process";
import { FieldMax } from "../../lib/wire.ts";

/** Git may take this long; a repository that needs more is answered with an error, not a wait. */
export const CHANGES_TIMEOUT_MS = 20_000;
/** Most output read from git (a file over 4 MiB is never diffed, so this is thousands of changed files). */
const MAX_OUTPUT_BYTES = 256 * 1024 * 1024;

/**
 * What changed in `cwd`; with `path`, only that file (its whole diff, within the frame's budget).
 * @throws {Error} with git's own message (or the timeout) when it failed.
 */
export function computeChanges(
  cwd: string,
  scope: ChangeScope,
  path?: string,
  timeoutMs = CHANGES_TIMEOUT_MS,
): Promise<Changes> {
  const boundary = newBoundary();
  return new Promise((resolve, reject) => {
    const child = execFile(
      "sh",
      ["-c", CHANGES_SCRIPT, "lvmh-changes", ...changesScriptArgs(boundary, scope, null)],
      {
        cwd: cwd || ".",
        env: { ...process.env, ...HARDENED_GIT_ENV },
        encoding: "utf8",
        maxBuffer: MAX_OUTPUT_BYTES,
        timeout: timeoutMs,
        killSignal: "SIGKILL",
        windowsHide: true,
      },
      (error, stdout, stderr) => {
        if (error && !String(stdout).includes(boundary)) {
          const why = (error as { killed?: boolean }).killed
            ? `git did not finish within ${timeoutMs} ms`
            : String(stderr || error.message).trim().split("\n").slice(-3).join(" / ");
          return reject(new Error(why.slice(0, FieldMax.commandError)));
        }
        try {
          resolve(
            changesFromOutput(String(stdout), boundary, { scope, limits: PLUGIN_CHANGE_LIMITS, only: path }),
          );
        } catch (err) {
          reject(err);
        }
      },
    );
    child.stdin?.end();
  });
}
