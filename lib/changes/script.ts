/**
 * The one git script that reads a working copy for "what changed", run by the daemon's diff helper container
 * (`docker/diff_helper.ts`) for spawned sessions and by the plugin in pi's cwd for terminal sessions. It
 * prints git's raw outputs in sections that `parseSections` splits; `buildChanges` makes the answer of them.
 *
 * It writes nothing in the repository: the working tree (untracked files included) is staged into a copy of
 * the index in a temporary directory, the blobs that takes go to a temporary object directory (the
 * repository's is an alternate), and every diff is `--cached` against that index, so all sections are one
 * consistent snapshot while the agent keeps working. Git runs hardened (no system or global config, no
 * fsmonitor, no hooks, no external diff or textconv, no optional locks); the repository's own config and
 * `.gitattributes` still apply, which is why spawned sessions run it in a container with no network and no
 * token. Inputs arrive only as positional parameters: $1 a random section boundary, $2 the scope, $3 the base
 * sha ("" = the merge-base with the upstream, else HEAD), $4 the base's branch name ("" = the one found).
 */

/** Over this size a file is not diffed (git calls it binary in the patch; its counts come from numstat). */
export const DIFF_BLOB_LIMIT = "4m";

/** The environment git runs with wherever it reads an agent's repository. */
export const HARDENED_GIT_ENV: Readonly<Record<string, string>> = {
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_TERMINAL_PROMPT: "0",
  GIT_OPTIONAL_LOCKS: "0",
};

export const CHANGES_SCRIPT = `set -u
b=$1; scope=$2; base=$3; basebranch=$4
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0 GIT_OPTIONAL_LOCKS=0 LC_ALL=C
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES \\
  GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT GIT_EXTERNAL_DIFF GIT_DIFF_OPTS GIT_PAGER 2>/dev/null || true
g() { git -c core.fsmonitor=false -c core.hooksPath=/dev/null -c core.untrackedCache=false -c gc.auto=0 \\
  --no-optional-locks --no-pager "$@"; }
tmp=$(mktemp -d "\${TMPDIR:-/tmp}/lvmh-changes.XXXXXX") || exit 3
trap 'rm -rf "$tmp"' EXIT
: > "$tmp/err"
top=$(g rev-parse --show-toplevel 2>/dev/null) || { printf '\\n%s norepo 0\\n' "$b"; exit 0; }
cd "$top" || exit 3
head=$(g rev-parse -q --verify 'HEAD^{commit}' 2>/dev/null) || head=
branch=$(g symbolic-ref -q --short HEAD 2>/dev/null) || branch=
if [ "$scope" = uncommitted ]; then
  base=$head; basebranch=\${branch:-HEAD}
elif [ -z "$base" ]; then
  up=$(g rev-parse -q --abbrev-ref --symbolic-full-name '@{upstream}' 2>/dev/null) || up=
  mb=
  if [ -n "$up" ] && [ -n "$head" ]; then mb=$(g merge-base HEAD '@{upstream}' 2>/dev/null) || mb=; fi
  if [ -n "$mb" ]; then base=$mb; basebranch=$up; else base=$head; basebranch=\${branch:-HEAD}; fi
fi
case $base in *[!0-9a-f]*) echo "lvmh: base is not a sha" >&2; exit 2;; esac
printf '\\n%s meta 0\\n%s\\n%s\\n%s\\n%s\\n' "$b" "$head" "$branch" "$base" "$basebranch"
against=\${base:-4b825dc642cb6eb9a060e54bf8d69288fbee4904}
gi=$(g rev-parse --git-path index) || exit 3
od=$(g rev-parse --git-path objects) && od=$(cd "$od" && pwd) || exit 3
# -p keeps the index's mtime: git's racy-clean check compares it with each entry's, and a copy stamped now
# would make a file rewritten at the same size within the index's second look unchanged.
if [ -f "$gi" ]; then cp -p "$gi" "$tmp/index" || exit 3; fi
mkdir "$tmp/objects" || exit 3
export GIT_INDEX_FILE="$tmp/index" GIT_OBJECT_DIRECTORY="$tmp/objects" GIT_ALTERNATE_OBJECT_DIRECTORIES="$od"
g add -A --ignore-errors >/dev/null 2>>"$tmp/err"
run() { name=$1; shift; g "$@" >"$tmp/out" 2>>"$tmp/err"; rc=$?; printf '\\n%s %s %s\\n' "$b" "$name" "$rc"; cat "$tmp/out"; }
D="diff --cached --no-ext-diff --no-textconv --no-color --no-relative -M -O/dev/null --submodule=short"
run numstat $D --numstat -z "$against"
run status $D --name-status -z "$against"
run patch -c core.bigFileThreshold=${DIFF_BLOB_LIMIT} $D -U3 --src-prefix=a/ --dst-prefix=b/ "$against"
if [ "$scope" = all ] && [ -n "$head" ] && [ -n "$base" ]; then
  run log log -z --reverse --no-show-signature --no-decorate --no-color --max-count=1001 \\
    --format='%H%x00%an%x00%at%x00%s' "$base..HEAD"
fi
printf '\\n%s err 0\\n' "$b"; tail -c 2000 "$tmp/err"
`;

/** The positional parameters of `CHANGES_SCRIPT` (after `$0`). */
export function changesScriptArgs(
  boundary: string,
  scope: "all" | "uncommitted",
  base: { sha: string; branch: string } | null,
): string[] {
  return [boundary, scope, base?.sha ?? "", base?.branch ?? ""];
}

/** A section boundary no file content can guess: the script's output is split on it. */
export function newBoundary(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return `@@lvmh-${Array.from(bytes, (x) => x.toString(16).padStart(2, "0")).join("")}`;
}
