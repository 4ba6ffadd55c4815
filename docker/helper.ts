/**
 * One short-lived helper container, run to completion and always removed: the shape every git helper shares
 * (the cache fetch, the working copy, the export and the push). It runs `sh -c <script> <name> <args...>` as
 * the worker's uid, so user input reaches a script only as positional parameters, never inside its text.
 * A secret (the GitLab token) travels only as one line on the helper's stdin through an attached connection
 * (`docker/attach.ts`): never in the environment, the command line or a file the engine can show. Files the
 * helper needs (a git bundle) are copied into its filesystem before it starts, through the archive endpoint.
 */
import type { Engine, Labels } from "./engine.ts";
import { attachStdin } from "./attach.ts";
import { createTar } from "./tar.ts";
import { DockerTimeoutError } from "./errors.ts";
import { workVolumeName } from "../lib/workspaces.ts";

/** The uid the worker image runs as; the volumes belong to it. */
export const HELPER_UID = 1000;

export interface HelperRun {
  image: string;
  /** The `lvmh.kind` label (a crashed daemon's leftovers are swept by it) and the container name's prefix. */
  kind: string;
  /** The script and its positional parameters ($0 first), run by `sh -c`. */
  cmd: string[];
  labels: Labels;
  /** `none` for helpers that read an agent's files; the worker network for those that talk to GitLab. */
  network: string;
  mounts: Record<string, unknown>[];
  /** One line written on the helper's stdin (the token), or null for none. */
  stdin: string | null;
  /** Files put into the helper before it starts: `dir` (absolute, existing in the image) and its members. */
  files?: { dir: string; entries: { path: string; data: Uint8Array }[] };
  timeoutMs?: number;
  /** The start of the error message when the script fails. */
  failure: string;
  /** Environment entries (`NAME=value`) beside the image's; never a secret (the engine shows them). */
  env?: string[];
  /** The script's working directory (default `/`). */
  workingDir?: string;
}

/** A helper's exit code and output (stdout and stderr kept apart; the streams are not a TTY). */
export interface HelperOutput {
  stdout: string;
  stderr: string;
}

/**
 * Run a helper to completion and remove it, on success or failure (a timeout removes it too).
 * @throws {HelperError} with the last lines of its stderr when it exits non-zero; {DockerError} when the engine
 * refuses.
 */
export async function runHelper(engine: Engine, o: HelperRun): Promise<HelperOutput> {
  const name = `lvmh-${o.kind}-${crypto.randomUUID().slice(0, 12)}`;
  const withStdin = o.stdin !== null;
  const id = await engine.containerCreate(name, {
    Image: o.image,
    Entrypoint: ["sh"],
    Cmd: ["-c", ...o.cmd],
    User: `${HELPER_UID}:${HELPER_UID}`,
    WorkingDir: o.workingDir ?? "/",
    ...(o.env ? { Env: o.env } : {}),
    Labels: { ...o.labels, "lvmh.kind": o.kind },
    Tty: false,
    OpenStdin: withStdin,
    StdinOnce: withStdin,
    AttachStdin: withStdin,
    ...(o.network === "none" ? { NetworkDisabled: true } : {}),
    HostConfig: {
      NetworkMode: o.network,
      Init: true,
      Mounts: o.mounts,
      Tmpfs: { "/run/lvmh": `size=64k,mode=0700,uid=${HELPER_UID},gid=${HELPER_UID}` },
    },
  });
  try {
    if (o.files) {
      await engine.containerPutArchive(
        id,
        o.files.dir,
        createTar(o.files.entries.map((e) => ({
          path: e.path,
          type: "file" as const,
          data: e.data,
          mode: 0o600,
          uid: HELPER_UID,
          gid: HELPER_UID,
        }))),
      );
    }
    if (withStdin) {
      // Attach before start, so the line is there when the script reads it.
      const stdin = await attachStdin(engine.socketPath, id);
      try {
        await engine.containerStart(id);
        await stdin.write(new TextEncoder().encode(o.stdin!));
      } finally {
        await stdin.close();
      }
    } else {
      await engine.containerStart(id);
    }
    // After start, "not-running" returns as soon as the helper exits, even if that already happened.
    const timeoutMs = o.timeoutMs ?? 10 * 60_000;
    const code = await engine.containerWait(id, "not-running", timeoutMs).catch((error) => {
      if (!(error instanceof DockerTimeoutError)) throw error;
      throw new HelperError(`${o.failure}: did not finish within ${timeoutMs} ms`, -1);
    });
    const logs = await engine.containerLogs(id);
    if (code !== 0) {
      throw new HelperError(`${o.failure}: ${lastLines(logs.stderr) || `exit code ${code}`}`, code);
    }
    return logs;
  } finally {
    await engine.containerRemove(id, true).catch(() => {});
  }
}

/**
 * A helper's script exited non-zero (the message carries the end of its stderr, git's own words), or ran past
 * its time limit (`code` -1).
 */
export class HelperError extends Error {
  override name = "HelperError";
  constructor(message: string, readonly code: number) {
    super(message);
  }
}

/** The last `n` lines of a helper's output, on one line, bounded. */
export function lastLines(text: string, n = 3): string {
  return text.trim().split("\n").slice(-n).join(" / ").slice(0, 1000);
}

/**
 * The shell prelude of every helper that runs git on an agent's repository: no system or global config, no
 * prompts, and overrides given through `GIT_CONFIG_COUNT` (the command-line level, which beats anything in the
 * repository's own config) for every setting that would make git run a program: fsmonitor, hooks, signing,
 * pagers, and each filter driver the repository's config names (its clean, smudge and process commands are
 * emptied and it is no longer required). External diff and textconv are refused per command
 * (`--no-ext-diff --no-textconv`). Leaves the shell in /workspace with `g` = hardened git and `$tmp` a
 * private temporary directory.
 */
export const HARDENED_GIT_PRELUDE = `set -eu
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0 GIT_OPTIONAL_LOCKS=0 LC_ALL=C \\
  HOME=/run/lvmh GIT_PAGER=cat PAGER=cat
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES \\
  GIT_CONFIG_PARAMETERS GIT_EXTERNAL_DIFF GIT_DIFF_OPTS GIT_SSH GIT_SSH_COMMAND GIT_ASKPASS 2>/dev/null || true
n=0
cfg() { export "GIT_CONFIG_KEY_$n=$1" "GIT_CONFIG_VALUE_$n=$2"; n=$((n + 1)); export GIT_CONFIG_COUNT=$n; }
cfg core.fsmonitor false; cfg core.hooksPath /dev/null; cfg core.untrackedCache false; cfg core.pager cat
cfg gc.auto 0; cfg maintenance.auto false; cfg commit.gpgSign false; cfg tag.gpgSign false
cfg log.showSignature false; cfg diff.noprefix false; cfg diff.mnemonicPrefix false; cfg color.ui false
cfg diff.ignoreSubmodules all; cfg status.submoduleSummary false; cfg commit.cleanup whitespace
cfg core.sshCommand false; cfg credential.helper ""; cfg protocol.allow never
tmp=$(mktemp -d /tmp/lvmh.XXXXXX)
cd /workspace
git config --name-only --get-regexp '^filter[.]' > "$tmp/filters" 2>/dev/null || true
while IFS= read -r key; do
  case $key in *.clean|*.smudge|*.process) cfg "$key" ""; cfg "\${key%.*}.required" false;; esac
done < "$tmp/filters"
g() { git --no-pager --no-optional-locks "$@"; }
`;

/**
 * One helper run, whatever runs it: a script on a session's working copy (mounted at /workspace, read-only or
 * not) or on nothing, with or without the network, with or without a secret. The Docker engine runs it as a
 * container (`dockerHelperRunner`), Kubernetes as a short-lived Pod on the session's claim
 * (`lib/kube/helper_pods.ts`); the git helpers (changes, export, bundle, push) only build jobs.
 */
export interface HelperJob {
  /** What it is (a label, the name's prefix, what a sweep looks for). */
  kind: string;
  /** The script and its positional parameters ($0 first), run by `sh -c`. */
  cmd: string[];
  /** The session whose working copy is mounted at /workspace; null for none. */
  workingCopy: { sessionId: string; readOnly: boolean } | null;
  /** Whether it talks to GitLab (the worker network); none otherwise. */
  network: boolean;
  /** One line the script reads on its stdin (the GitLab token), or null; never in env, argument or object. */
  secret: string | null;
  /** Files put into the helper before the script runs: `dir` (absolute, existing in the image) and members. */
  files?: { dir: string; entries: { path: string; data: Uint8Array }[] };
  /** Environment entries (`NAME=value`), never a secret. */
  env?: string[];
  workingDir?: string;
  timeoutMs?: number;
  /** The start of the error message when the script fails. */
  failure: string;
  /** Extra labels (Docker: `lvmh.repo`). */
  labels?: Labels;
}

/** Runs helper jobs to completion and removes what it made. @throws {HelperError} as `runHelper`. */
export interface HelperRunner {
  run(job: HelperJob): Promise<HelperOutput>;
}

/**
 * Helpers as containers on a Docker engine: the working copy is the session's `lvmh-work-<id>` volume (or
 * `volume`, for tests that bind one), the network `network` when the job needs one.
 */
export function dockerHelperRunner(
  engine: Engine,
  o: { image: string; network: string; labels?: Labels; volume?: string },
): HelperRunner {
  return {
    run: (job) =>
      runHelper(engine, {
        image: o.image,
        kind: job.kind,
        cmd: job.cmd,
        labels: {
          "lvmh.managed": "true",
          ...(job.workingCopy ? { "lvmh.session": job.workingCopy.sessionId } : {}),
          ...o.labels,
          ...job.labels,
        },
        network: job.network ? o.network : "none",
        mounts: job.workingCopy
          ? [{
            Type: "volume",
            Source: o.volume ?? workVolumeName(job.workingCopy.sessionId),
            Target: "/workspace",
            ReadOnly: job.workingCopy.readOnly,
          }]
          : [],
        stdin: job.secret,
        files: job.files,
        env: job.env,
        workingDir: job.workingDir,
        timeoutMs: job.timeoutMs,
        failure: job.failure,
      }),
  };
}

/** An engine, or a runner already made: the git helpers take either (tests hand them an engine). */
export function asRunner(
  x: Engine | HelperRunner,
  o: { image?: string; network?: string; labels?: Labels; volume?: string },
): HelperRunner {
  if ("run" in x && typeof x.run === "function") return x as HelperRunner;
  if (!o.image) throw new TypeError("a helper on a Docker engine needs its image");
  return dockerHelperRunner(x as Engine, { ...o, image: o.image, network: o.network ?? "none" });
}
