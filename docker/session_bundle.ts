/**
 * A session's work as one git bundle a person can clone: its branch (the history up to the recorded base,
 * the agent's commits), plus one commit of the uncommitted changes (untracked files included) on top. Made
 * in a helper container with no token and no network, the working copy mounted read-only: the extra commit
 * is written with a private index and object directory under /tmp, and the bundle from a throwaway bare
 * repository whose only objects are borrowed (alternates), so the session's branch, index and objects are
 * never touched. git runs hardened (`HARDENED_GIT_PRELUDE`); what comes out is a bundle the daemon hands on.
 */
import { Buffer } from "node:buffer";
import type { Engine, Labels } from "./engine.ts";
import { asRunner, HARDENED_GIT_PRELUDE, type HelperRunner } from "./helper.ts";

/** Bundles beyond this are refused rather than pulled through the engine's log stream. */
export const SESSION_BUNDLE_LIMIT = 512 * 1024 * 1024;

// $1 = base sha, $2 = the branch name in the bundle, $3 = the extra commit's message.
const SCRIPT = `${HARDENED_GIT_PRELUDE}
base=$1
branch=$2
case $base in *[!0-9a-f]*|"") echo "lvmh: base is not a sha" >&2; exit 2;; esac
head=$(g rev-parse -q --verify 'HEAD^{commit}') || { echo "lvmh: the working copy has no commit" >&2; exit 3; }
if ! g merge-base --is-ancestor "$base" "$head"; then
  echo "lvmh: the session's HEAD no longer contains its base commit $base" >&2; exit 3
fi
gi=$(g rev-parse --git-path index)
od=$(cd "$(g rev-parse --git-path objects)" && pwd)
if [ -f "$gi" ]; then cp "$gi" "$tmp/index"; fi
mkdir "$tmp/objects"
tip=$head
(
  export GIT_INDEX_FILE="$tmp/index" GIT_OBJECT_DIRECTORY="$tmp/objects" GIT_ALTERNATE_OBJECT_DIRECTORIES="$od"
  export GIT_AUTHOR_NAME=lvmh GIT_AUTHOR_EMAIL=lvmh@localhost GIT_COMMITTER_NAME=lvmh \\
    GIT_COMMITTER_EMAIL=lvmh@localhost
  g add -A >/dev/null
  if ! g diff --cached --quiet HEAD --; then
    g commit-tree "$(g write-tree)" -p "$head" -m "$3" > "$tmp/tip"
  fi
)
if [ -f "$tmp/tip" ]; then tip=$(cat "$tmp/tip"); fi
out=$tmp/out.git
g init -q --bare "$out"
printf '%s\\n%s\\n' "$od" "$tmp/objects" > "$out/objects/info/alternates"
g -C "$out" update-ref "refs/heads/$branch" "$tip"
g -C "$out" symbolic-ref HEAD "refs/heads/$branch"
g -C "$out" bundle create -q "$tmp/work.bundle" HEAD "refs/heads/$branch"
size=$(wc -c < "$tmp/work.bundle")
if [ "$size" -gt ${SESSION_BUNDLE_LIMIT} ]; then
  echo "lvmh: the bundle is larger than ${SESSION_BUNDLE_LIMIT} bytes" >&2; exit 4
fi
echo "lvmh: head $head"
echo "lvmh: tip $tip"
echo "lvmh: bundle"
base64 "$tmp/work.bundle"
`;

/** What `sessionBundle` made. */
export interface SessionBundle {
  /** The branch's head in the working copy. */
  head: string;
  /** The bundle's branch tip: `head`, or the extra commit of the uncommitted changes on it. */
  tip: string;
  bundle: Uint8Array;
}

/**
 * Bundle a session's working copy: `branch` at its head (full history), with the uncommitted changes as one
 * more commit. Writes nothing in the volume.
 * @throws {HelperError} when git fails (no commit, the base no longer an ancestor, too large).
 */
export async function sessionBundle(
  engine: Engine | HelperRunner,
  o: {
    /** The session whose working copy is bundled (with a runner). */
    sessionId?: string;
    /** With an engine: the image and the working copy's volume (`lvmh-work-<id>`). */
    image?: string;
    volume?: string;
    baseSha: string;
    branch: string;
    message: string;
    labels?: Labels;
    timeoutMs?: number;
  },
): Promise<SessionBundle> {
  const { stdout } = await asRunner(engine, o).run({
    kind: "export",
    cmd: [SCRIPT, "lvmh-bundle", o.baseSha, o.branch, o.message],
    workingCopy: { sessionId: o.sessionId ?? "", readOnly: true },
    network: false,
    secret: null,
    timeoutMs: o.timeoutMs ?? 5 * 60_000,
    failure: "git failed in the session's working copy",
  });
  const at = stdout.indexOf("lvmh: bundle\n");
  const meta = at < 0 ? "" : stdout.slice(0, at);
  const head = /^lvmh: head ([0-9a-f]{40})$/m.exec(meta);
  const tip = /^lvmh: tip ([0-9a-f]{40})$/m.exec(meta);
  if (!head || !tip) throw new Error(`the bundle helper gave no head: ${stdout.slice(0, 200)}`);
  const bundle = new Uint8Array(Buffer.from(stdout.slice(at + "lvmh: bundle\n".length), "base64"));
  return { head: head[1], tip: tip[1], bundle };
}
