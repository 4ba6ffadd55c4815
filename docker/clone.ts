/**
 * The repository cache and the sessions' working copies, each made by a short-lived helper container.
 *
 * The cache: the repo volume (`lvmh-repo-<slug>`) holds a bare repository at `CACHE_DIR`, cloned once and
 * then fetched (branches and tags, pruned) by `fetchIntoCache`. It is never anyone's working tree, so a
 * fetch never moves files under a running agent. A volume from an older lvmh that holds a checkout at its
 * root keeps it untouched beside the cache (a session of that version may still run on it).
 *
 * The GitLab token must not reach a container's environment or command line (both show in `docker
 * inspect` and `ps`), an image layer, nor the cache's config. So the fetch helper is created with stdin
 * open; the daemon attaches to that stdin (a hijacked connection, `docker/attach.ts`), starts the helper and
 * writes the token as one line. The script reads it into a file on a tmpfs that only the helper sees (memory,
 * gone with the container), and a fixed `credential.helper` given with `git -c` (so it is never written to a
 * config file) prints it to git. The remote URL carries no credentials.
 *
 * A working copy: `copyWorkspace` runs a helper with no network and no token that mounts the cache
 * read-only and the session's own volume, clones the cache into it (`--no-hardlinks`: a full copy of the
 * objects, so nothing in the working copy refers back to the cache, which a later fetch may prune), and
 * checks out the session's branch from the head of the requested branch. Helpers are removed afterwards, on
 * success or failure; user input (URL, branch names) reaches their scripts only as positional parameters,
 * never inside their text.
 */
import type { Engine, Labels } from "./engine.ts";
import { lastLines, runHelper } from "./helper.ts";

/** The uid the worker image runs as; the volumes belong to it. */
export const WORKER_UID = 1000;

/** The bare cache in the repo volume: a subdirectory, as an older lvmh's checkout may own the root. */
export const CACHE_DIR = ".lvmh-cache.git";

/** Git without the system or user configuration, prompts, hooks or fsmonitor: only what lvmh passes. */
const GIT_ENV = `export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0
g() { git -c core.fsmonitor=false -c core.hooksPath=/dev/null "$@"; }`;

// $1 = clone URL, $2 = "1" when the token comes on stdin.
const FETCH_SCRIPT = `set -eu
url=$1
with_token=$2
cache=/workspace/${CACHE_DIR}
cred=/run/lvmh/credential
${GIT_ENV}
set -- -c credential.interactive=never -c credential.helper=
if [ "$with_token" = 1 ]; then
  IFS= read -r token || true
  (umask 077; printf '%s' "$token" > "$cred")
  token=
  set -- "$@" -c 'credential.helper=!f() { test "$1" = get || exit 0; echo username=oauth2; printf "password=%s\\n" "$(cat /run/lvmh/credential)"; }; f'
fi
if [ -f "$cache/HEAD" ]; then
  echo "lvmh: fetching"
  g "$@" --git-dir="$cache" fetch -q --prune -- "$url" '+refs/heads/*:refs/heads/*' '+refs/tags/*:refs/tags/*'
else
  echo "lvmh: cloning"
  # Into a temporary name first: a clone cut short never passes for a cache.
  rm -rf "$cache.tmp"
  g "$@" clone -q --bare -- "$url" "$cache.tmp"
  mv "$cache.tmp" "$cache"
fi
`;

// $1 = remote URL for the copy's origin, $2 = base branch or "" (the cache's default branch), $3 = base sha
// or "" (the branch's head), $4 = the session's branch. /cache is the repo volume (read-only), /workspace the
// session's. Prints "lvmh: base <branch> <sha>", or "lvmh: kept" when the copy exists and its base is known.
const COPY_SCRIPT = `set -eu
url=$1
base=$2
sha=$3
branch=$4
src=/cache/${CACHE_DIR}
${GIT_ENV}
if [ -e /workspace/.git ]; then
  if [ -n "$sha" ]; then echo "lvmh: kept"; exit 0; fi
  # A copy nobody recorded is what a daemon killed mid-spawn left: no agent ever ran on it.
  find /workspace -mindepth 1 -delete
fi
if [ ! -f "$src/HEAD" ]; then echo "lvmh: the repository cache is empty" >&2; exit 2; fi
if [ -z "$base" ]; then base=$(g --git-dir="$src" symbolic-ref --short HEAD); fi
if ! g check-ref-format "refs/heads/$base"; then echo "lvmh: invalid branch name: $base" >&2; exit 2; fi
if [ -z "$sha" ]; then
  sha=$(g --git-dir="$src" rev-parse -q --verify "refs/heads/$base^{commit}") || {
    echo "fatal: Remote branch $base not found" >&2; exit 2; }
fi
g clone -q --no-hardlinks --no-checkout -- "$src" /workspace
cd /workspace
g checkout -q --no-track -b "$branch" "$sha"
# The session's branch is its only local one (the clone made one for the cache's HEAD).
g for-each-ref --format='delete %(refname)' refs/heads/ | grep -vxF "delete refs/heads/$branch" |
  g update-ref --stdin
g remote set-url origin "$url"
echo "lvmh: base $base $(g rev-parse HEAD)"
`;

export interface CloneOptions {
  image: string;
  /** The repo volume (the cache). */
  volume: string;
  url: string;
  /** The GitLab token, or null for a public repository. */
  token: string | null;
  network: string;
  labels: Labels;
  timeoutMs?: number;
}

/** What the fetch helper did: `cloned` the cache into an empty volume or `fetched` into an existing one. */
export type CloneResult = { action: "cloned" | "fetched"; output: string };

/**
 * Clone the repository into the cache, or fetch into it; callers serialise calls for one volume.
 * @throws {Error} with git's own message when git exits non-zero; {DockerError} when the engine refuses.
 */
export async function fetchIntoCache(engine: Engine, o: CloneOptions): Promise<CloneResult> {
  const withToken = o.token !== null && o.token !== "";
  const { stdout, stderr } = await runHelper(engine, {
    image: o.image,
    kind: "clone",
    cmd: [FETCH_SCRIPT, "lvmh-fetch", o.url, withToken ? "1" : "0"],
    labels: o.labels,
    network: o.network,
    mounts: [{ Type: "volume", Source: o.volume, Target: "/workspace" }],
    stdin: withToken ? `${o.token}\n` : null,
    timeoutMs: o.timeoutMs,
    failure: `git failed for ${o.url}`,
  });
  return { action: stdout.includes("lvmh: fetching") ? "fetched" : "cloned", output: stdout + stderr };
}

export interface CopyOptions {
  image: string;
  /** The repo volume (the cache), mounted read-only. */
  cacheVolume: string;
  /** The session's working copy volume. */
  workVolume: string;
  /** The URL the copy's `origin` names (without credentials; the copy never fetches by itself). */
  url: string;
  /** The branch to start from; null for the cache's default branch. */
  baseBranch: string | null;
  /** Start from this commit instead of the branch's head (a session spawned again keeps its base). */
  baseSha: string | null;
  /** The session's own branch. */
  branch: string;
  labels: Labels;
  timeoutMs?: number;
}

/** The copy made (what the daemon records), or `kept` when the volume already held the session's copy. */
export type CopyResult = { kept: true } | { kept: false; baseBranch: string; baseSha: string };

/**
 * Make a session's working copy from the cache, without the network; callers serialise it with the cache's
 * fetches (a fetch's automatic gc could repack objects while they are copied).
 * @throws {Error} with git's message (e.g. an unknown branch); {DockerError} when the engine refuses.
 */
export async function copyWorkspace(engine: Engine, o: CopyOptions): Promise<CopyResult> {
  const { stdout } = await runHelper(engine, {
    image: o.image,
    kind: "copy",
    cmd: [COPY_SCRIPT, "lvmh-copy", o.url, o.baseBranch ?? "", o.baseSha ?? "", o.branch],
    labels: o.labels,
    network: "none",
    mounts: [
      { Type: "volume", Source: o.cacheVolume, Target: "/cache", ReadOnly: true },
      { Type: "volume", Source: o.workVolume, Target: "/workspace" },
    ],
    stdin: null,
    timeoutMs: o.timeoutMs,
    failure: `git ${o.baseBranch ? `(branch ${o.baseBranch}) ` : ""}failed for ${o.url}`,
  });
  if (/^lvmh: kept$/m.test(stdout)) return { kept: true };
  const m = stdout.match(/^lvmh: base (\S+) ([0-9a-f]{40})$/m);
  if (!m) throw new Error(`the working copy helper did not report its base: ${lastLines(stdout)}`);
  return { kept: false, baseBranch: m[1], baseSha: m[2] };
}
