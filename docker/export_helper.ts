/**
 * Read what a session's working copy would ship, commit it, and export it as a git bundle, in helper
 * containers that hold no token and have no network (`NetworkMode: "none"`). The agent wrote everything in
 * that repository, its `.git/config` included, so git runs hardened (`HARDENED_GIT_PRELUDE`) and is trusted
 * no further than the container: what comes out is data the daemon checks (a sha, a patch it scans, a bundle
 * a fresh repository verifies), never instructions.
 *
 * Three steps, each its own container: `inspectWork` (read-only: the head, whether there are uncommitted
 * changes, and the added lines of every commit since the base and of the uncommitted changes, for the secret
 * scan, staged into a private index and object directory so nothing is written); `commitWork` (the only one
 * with the volume read-write: commits the uncommitted changes on the session's branch); `bundleWork`
 * (read-only: `git bundle create` of `baseSha..HEAD`, sent back base64 on stdout).
 */
import { Buffer } from "node:buffer";
import type { Engine, Labels } from "./engine.ts";
import { asRunner, HARDENED_GIT_PRELUDE, type HelperRunner } from "./helper.ts";

/** Only added lines and where they are: no context, no renames (a rename adds nothing), prefixes fixed. */
const PATCH_FLAGS = "--no-ext-diff --no-textconv --no-color --no-renames -U0 --src-prefix=a/ --dst-prefix=b/";
/** The patch for the scan is cut here; a change this large is not one a person reviews line by line anyway. */
const PATCH_LIMIT = 64 * 1024 * 1024;
/** Bundles beyond this are refused rather than pulled through the engine's log stream. */
export const BUNDLE_LIMIT = 512 * 1024 * 1024;

// $1 = base sha. Prints the head, clean/dirty, whether the head still contains the base, then the patch.
const INSPECT_SCRIPT = `${HARDENED_GIT_PRELUDE}
base=$1
case $base in *[!0-9a-f]*|"") echo "lvmh: base is not a sha" >&2; exit 2;; esac
head=$(g rev-parse -q --verify 'HEAD^{commit}') || { echo "lvmh: the working copy has no commit" >&2; exit 3; }
echo "lvmh: head $head"
if g merge-base --is-ancestor "$base" "$head" 2>/dev/null; then echo "lvmh: contains base"; fi
gi=$(g rev-parse --git-path index)
od=$(cd "$(g rev-parse --git-path objects)" && pwd)
if [ -f "$gi" ]; then cp "$gi" "$tmp/index"; fi
mkdir "$tmp/objects"
export GIT_INDEX_FILE="$tmp/index" GIT_OBJECT_DIRECTORY="$tmp/objects" GIT_ALTERNATE_OBJECT_DIRECTORIES="$od"
g add -A >/dev/null
if g diff --cached --quiet HEAD --; then echo "lvmh: clean"; else echo "lvmh: dirty"; fi
echo "lvmh: patch"
{
  g log -p --reverse ${PATCH_FLAGS} --format='commit %H' "$base..$head" -- 2>/dev/null || true
  g diff --cached ${PATCH_FLAGS} HEAD --
} | head -c ${PATCH_LIMIT}
`;

// $1 = message, $2 = author name, $3 = author e-mail. Prints "lvmh: committed" or "lvmh: clean", the head,
// then the new commit's patch.
const COMMIT_SCRIPT = `${HARDENED_GIT_PRELUDE}
export GIT_AUTHOR_NAME="$2" GIT_AUTHOR_EMAIL="$3" GIT_COMMITTER_NAME="$2" GIT_COMMITTER_EMAIL="$3"
g add -A
if g diff --cached --quiet HEAD --; then
  echo "lvmh: clean"
else
  g commit -q --no-verify --no-edit -m "$1"
  echo "lvmh: committed"
fi
echo "lvmh: head $(g rev-parse -q --verify 'HEAD^{commit}')"
echo "lvmh: patch"
g show ${PATCH_FLAGS} --format='commit %H' HEAD -- | head -c ${PATCH_LIMIT}
`;

// $1 = base sha. Prints the head, then the bundle of base..HEAD in base64.
const BUNDLE_SCRIPT = `${HARDENED_GIT_PRELUDE}
base=$1
case $base in *[!0-9a-f]*|"") echo "lvmh: base is not a sha" >&2; exit 2;; esac
head=$(g rev-parse -q --verify 'HEAD^{commit}') || { echo "lvmh: the working copy has no commit" >&2; exit 3; }
if ! g merge-base --is-ancestor "$base" "$head"; then
  echo "lvmh: the session's HEAD no longer contains its base commit $base" >&2; exit 3
fi
g bundle create -q "$tmp/export.bundle" HEAD "^$base"
size=$(wc -c < "$tmp/export.bundle")
if [ "$size" -gt ${BUNDLE_LIMIT} ]; then echo "lvmh: the bundle is larger than ${BUNDLE_LIMIT} bytes" >&2; exit 4; fi
echo "lvmh: head $head"
echo "lvmh: bundle"
base64 "$tmp/export.bundle"
`;

/** Where the helpers run: a runner (a backend's) on `sessionId`'s copy, or an engine on `volume`. */
export interface ExportOptions {
  /** The session whose working copy is read (with a runner). */
  sessionId?: string;
  /** With an engine: the image and the working copy's volume (`lvmh-work-<id>`). */
  image?: string;
  volume?: string;
  labels?: Labels;
  timeoutMs?: number;
}

/** What `inspectWork` saw. */
export interface WorkState {
  head: string;
  /** Uncommitted changes (untracked files included) exist. */
  dirty: boolean;
  /** The head still descends from the base (false: the agent rewrote the branch below it). */
  containsBase: boolean;
  /** The added lines since the base (each commit's, then the uncommitted ones), as git's unified diff. */
  patch: string;
}

const SHA_LINE = /^lvmh: head ([0-9a-f]{40})$/m;

function run(
  engine: Engine | HelperRunner,
  o: ExportOptions,
  kind: string,
  script: string,
  args: string[],
  readOnly: boolean,
) {
  return asRunner(engine, o).run({
    kind,
    cmd: [script, `lvmh-${kind}`, ...args],
    workingCopy: { sessionId: o.sessionId ?? "", readOnly },
    network: false,
    secret: null,
    timeoutMs: o.timeoutMs ?? 5 * 60_000,
    failure: "git failed in the session's working copy",
  });
}

/** The head, state and added lines of a working copy, relative to `baseSha`; writes nothing. */
export async function inspectWork(
  engine: Engine | HelperRunner,
  o: ExportOptions & { baseSha: string },
): Promise<WorkState> {
  const { stdout } = await run(engine, o, "export", INSPECT_SCRIPT, [o.baseSha], true);
  const at = stdout.indexOf("lvmh: patch\n");
  const head = SHA_LINE.exec(stdout.slice(0, at));
  if (at < 0 || !head) throw new Error(`the export helper gave no head: ${stdout.slice(0, 200)}`);
  const meta = stdout.slice(0, at);
  return {
    head: head[1],
    dirty: /^lvmh: dirty$/m.test(meta),
    containsBase: /^lvmh: contains base$/m.test(meta),
    patch: stdout.slice(at + "lvmh: patch\n".length),
  };
}

/**
 * Commit every uncommitted change (untracked files included) on the working copy's current branch.
 * @returns the new head, whether a commit was made, and that commit's added lines.
 */
export async function commitWork(
  engine: Engine | HelperRunner,
  o: ExportOptions & { message: string; authorName: string; authorEmail: string },
): Promise<{ head: string; committed: boolean; patch: string }> {
  const { stdout } = await run(
    engine,
    o,
    "export",
    COMMIT_SCRIPT,
    [o.message, o.authorName, o.authorEmail],
    false,
  );
  const at = stdout.indexOf("lvmh: patch\n");
  const head = SHA_LINE.exec(stdout.slice(0, at));
  if (at < 0 || !head) throw new Error(`the commit helper gave no head: ${stdout.slice(0, 200)}`);
  const committed = /^lvmh: committed$/m.test(stdout.slice(0, at));
  return { head: head[1], committed, patch: committed ? stdout.slice(at + "lvmh: patch\n".length) : "" };
}

/** `git bundle create` of `baseSha..HEAD`: the objects the push needs, and the head they lead to. */
export async function bundleWork(
  engine: Engine | HelperRunner,
  o: ExportOptions & { baseSha: string },
): Promise<{ head: string; bundle: Uint8Array }> {
  const { stdout } = await run(engine, o, "export", BUNDLE_SCRIPT, [o.baseSha], true);
  const at = stdout.indexOf("lvmh: bundle\n");
  const head = SHA_LINE.exec(stdout.slice(0, at));
  if (at < 0 || !head) throw new Error(`the bundle helper gave no head: ${stdout.slice(0, 200)}`);
  const bundle = new Uint8Array(Buffer.from(stdout.slice(at + "lvmh: bundle\n".length), "base64"));
  return { head: head[1], bundle };
}
