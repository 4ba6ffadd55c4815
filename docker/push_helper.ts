/**
 * Push a session's work to its own branch on GitLab from a helper container that never sees the agent's
 * files. The helper gets the token exactly as the cache fetch does (one line on stdin, kept in a file on a
 * private tmpfs, handed to git by a fixed credential helper), makes a fresh bare repository whose config
 * only this script writes, fetches the base commit from GitLab and the work from the bundle the export
 * helper made (`docker/export_helper.ts`; the bundle is only objects and one ref, and `transfer.fsckObjects`
 * checks them), then pushes the expected head to `refs/heads/<branch>` at the URL lvmh built from its own
 * record of the project. Nothing the agent wrote can name a remote, a helper, a hook or a filter here.
 *
 * The push is always `--force-with-lease=refs/heads/<branch>:<expected>`: `expected` is the sha lvmh last
 * pushed there, or empty for "the branch must not exist yet". So a branch lvmh did not create, or one someone
 * else moved since, is never overwritten, and there is never a plain force. The branch must be one of lvmh's
 * (`lvmh/…`), checked here and by the caller, so the target branch is never pushed to.
 */
import type { Engine, Labels } from "./engine.ts";
import { asRunner, type HelperRunner } from "./helper.ts";

/** Where the bundle is copied into the helper before it starts. */
const BUNDLE_DIR = "/tmp";
const BUNDLE_NAME = "lvmh-export.bundle";
/** The branches lvmh creates: `lvmh/` and 8 hex digits. */
export const LVMH_BRANCH_RE = /^lvmh\/[0-9a-f]{8}$/;
const SHA_RE = /^[0-9a-f]{40}$/;

// $1 = URL, $2 = branch, $3 = base sha, $4 = base branch, $5 = head sha, $6 = lease sha or "", $7 = "1" when
// the token comes on stdin.
const PUSH_SCRIPT = `set -eu
url=$1; branch=$2; base=$3; basebranch=$4; head=$5; lease=$6; with_token=$7
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0 LC_ALL=C HOME=/run/lvmh
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES \\
  GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT GIT_SSH GIT_SSH_COMMAND GIT_ASKPASS 2>/dev/null || true
case $branch in lvmh/????????) ;; *) echo "lvmh: refusing to push to $branch" >&2; exit 2;; esac
for s in "$base" "$head" $lease; do
  case $s in *[!0-9a-f]*|"") echo "lvmh: not a sha: $s" >&2; exit 2;; esac
done
if [ "$with_token" = 1 ]; then
  IFS= read -r token || true
  (umask 077; printf '%s' "$token" > /run/lvmh/credential)
  token=
fi
repo=$(mktemp -d /tmp/lvmh-push.XXXXXX)
git init -q --bare "$repo"
export GIT_DIR="$repo"
# The whole configuration of this repository: written here, by lvmh, and nothing else.
git config core.hooksPath /dev/null
git config core.fsmonitor false
git config gc.auto 0
git config transfer.fsckObjects true
git config protocol.allow never
git config protocol.http.allow always
git config protocol.https.allow always
git config protocol.file.allow always
git config http.followRedirects false
git config push.recurseSubmodules no
git config credential.interactive never
git config credential.helper '!f() { test "$1" = get || exit 0; test -s /run/lvmh/credential || exit 0; echo username=oauth2; printf "password=%s\\n" "$(cat /run/lvmh/credential)"; }; f'
# The base from GitLab (only it: what the push leaves out), then the work from the bundle.
if ! git fetch -q --no-tags --depth=1 -- "$url" "$base" 2>"$repo/fetch.err"; then
  git fetch -q --no-tags -- "$url" "+refs/heads/$basebranch:refs/lvmh/base"
  git cat-file -e "$base^{commit}" || { echo "lvmh: the base commit $base is not on GitLab" >&2; exit 3; }
fi
git bundle verify -q "${BUNDLE_DIR}/${BUNDLE_NAME}" >/dev/null 2>"$repo/verify.err" || { cat "$repo/verify.err" >&2; exit 3; }
git fetch -q --no-tags -- "${BUNDLE_DIR}/${BUNDLE_NAME}" "HEAD:refs/lvmh/export"
got=$(git rev-parse refs/lvmh/export)
if [ "$got" != "$head" ]; then echo "lvmh: the bundle holds $got, not $head" >&2; exit 3; fi
git merge-base --is-ancestor "$base" "$head" || { echo "lvmh: $head does not contain the base $base" >&2; exit 3; }
git push -q --force-with-lease="refs/heads/$branch:$lease" -- "$url" "$head:refs/heads/$branch"
echo "lvmh: pushed $head"
`;

export interface PushOptions {
  /** With an engine: the image, the network and labels. */
  image?: string;
  /** The project's clone URL, built from lvmh's record of the session's repository (no credentials). */
  url: string;
  /** The session's branch (`lvmh/<8 hex>`). */
  branch: string;
  baseSha: string;
  baseBranch: string;
  /** The head the bundle must lead to: the one pushed. */
  head: string;
  /** What `branch` holds on GitLab now as lvmh last pushed it, or null when lvmh never pushed it. */
  lease: string | null;
  bundle: Uint8Array;
  token: string | null;
  network?: string;
  labels?: Labels;
  timeoutMs?: number;
}

/**
 * Push `head` to `refs/heads/<branch>` under the lease.
 * @throws {HelperError} with git's own message (a stale lease, a token without `write_repository`…);
 * {TypeError} for a branch that is not lvmh's or a malformed sha, before anything runs.
 */
export async function pushBundle(engine: Engine | HelperRunner, o: PushOptions): Promise<void> {
  if (!LVMH_BRANCH_RE.test(o.branch)) throw new TypeError(`not an lvmh branch: ${JSON.stringify(o.branch)}`);
  for (const sha of [o.baseSha, o.head, ...(o.lease === null ? [] : [o.lease])]) {
    if (!SHA_RE.test(sha)) throw new TypeError(`not a sha: ${JSON.stringify(sha)}`);
  }
  const withToken = o.token !== null && o.token !== "";
  await asRunner(engine, o).run({
    kind: "push",
    cmd: [
      PUSH_SCRIPT,
      "lvmh-push",
      o.url,
      o.branch,
      o.baseSha,
      o.baseBranch,
      o.head,
      o.lease ?? "",
      withToken ? "1" : "0",
    ],
    // No working copy at all: the helper sees the bundle and nothing else of the session.
    workingCopy: null,
    network: true,
    secret: withToken ? `${o.token}\n` : null,
    files: { dir: BUNDLE_DIR, entries: [{ path: BUNDLE_NAME, data: o.bundle }] },
    timeoutMs: o.timeoutMs ?? 10 * 60_000,
    failure: `git push to ${o.branch} of ${o.url} failed`,
  });
}
