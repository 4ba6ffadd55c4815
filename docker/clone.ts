/**
 * Clone or pull a repository into its named volume through a short-lived helper container.
 *
 * The GitLab token must not reach a container's environment or command line (both show in `docker
 * inspect` and `ps`) nor the clone's `.git/config`. So: the helper is created (not started), the token is
 * copied into its own writable layer as `/tmp/lvmh-git-credential` (mode 0400, uid 1000) through
 * `PUT /containers/{id}/archive`, and a fixed `credential.helper` given with `git -c` (so it is never
 * written to any config file) prints it to git. The remote URL carries no credentials. The script deletes
 * the file on exit, and the container (with its layer) is removed right after, on success or failure.
 * User input (URL, branch) reaches the script only as positional parameters, never inside its text.
 */
import type { Engine, Labels } from "./engine.ts";
import { createTar } from "./tar.ts";

/** The uid the worker image runs as; the repo volume and the credential file belong to it. */
export const WORKER_UID = 1000;
const CREDENTIAL_FILE = "lvmh-git-credential";

// $1 = clone URL, $2 = branch or "". Reads the token (if any) from /tmp/lvmh-git-credential.
const SCRIPT = `set -eu
url=$1
branch=$2
cred=/tmp/${CREDENTIAL_FILE}
trap 'rm -f "$cred"' EXIT
export GIT_TERMINAL_PROMPT=0
set -- -c credential.interactive=never -c credential.helper=
if [ -f "$cred" ]; then
  set -- "$@" -c 'credential.helper=!f() { test "$1" = get || exit 0; echo username=oauth2; printf "password=%s\\n" "$(cat /tmp/${CREDENTIAL_FILE})"; }; f'
fi
if [ -d /workspace/.git ]; then
  echo "lvmh: pulling"
  git "$@" -C /workspace fetch -q --prune origin
  if [ -n "$branch" ]; then git -C /workspace checkout -q "$branch"; fi
  # Sessions may have local work in the shared tree; keep it rather than fail the spawn.
  git -C /workspace merge -q --ff-only '@{u}' || echo "lvmh: not fast-forwarded, local changes kept" >&2
else
  echo "lvmh: cloning"
  if [ -n "$branch" ]; then
    git "$@" clone -q --branch "$branch" -- "$url" /workspace
  else
    git "$@" clone -q -- "$url" /workspace
  fi
fi
`;

export interface CloneOptions {
  image: string;
  volume: string;
  url: string;
  branch: string | null;
  /** The GitLab token, or null for a public repository. */
  token: string | null;
  network: string;
  labels: Labels;
  timeoutMs?: number;
}

/** What the helper did: `cloned` into an empty volume or `pulled` into an existing clone. */
export type CloneResult = { action: "cloned" | "pulled"; output: string };

/**
 * Run the helper to completion and remove it.
 * @throws {Error} with git's own message when git exits non-zero; {DockerError} when the engine refuses.
 */
export async function cloneIntoVolume(engine: Engine, o: CloneOptions): Promise<CloneResult> {
  const name = `lvmh-clone-${crypto.randomUUID().slice(0, 12)}`;
  const id = await engine.containerCreate(name, {
    Image: o.image,
    Entrypoint: ["sh"],
    Cmd: ["-c", SCRIPT, "lvmh-clone", o.url, o.branch ?? ""],
    User: `${WORKER_UID}:${WORKER_UID}`,
    WorkingDir: "/",
    Labels: { ...o.labels, "lvmh.kind": "clone" },
    Tty: false,
    HostConfig: {
      NetworkMode: o.network,
      Init: true,
      Mounts: [{ Type: "volume", Source: o.volume, Target: "/workspace" }],
    },
  });
  try {
    if (o.token) {
      const tar = createTar([{
        path: CREDENTIAL_FILE,
        type: "file",
        data: new TextEncoder().encode(o.token),
        mode: 0o400,
        uid: WORKER_UID,
        gid: WORKER_UID,
      }]);
      await engine.containerPutArchive(id, "/tmp", tar);
    }
    await engine.containerStart(id);
    // After start, "not-running" returns as soon as the helper exits, even if that already happened.
    const code = await engine.containerWait(id, "not-running", o.timeoutMs ?? 10 * 60_000);
    const { stdout, stderr } = await engine.containerLogs(id);
    if (code !== 0) {
      const reason = lastLines(stderr) || `exit code ${code}`;
      throw new Error(`git ${o.branch ? `(branch ${o.branch}) ` : ""}failed for ${o.url}: ${reason}`);
    }
    return { action: stdout.includes("lvmh: pulling") ? "pulled" : "cloned", output: stdout + stderr };
  } finally {
    await engine.containerRemove(id, true).catch(() => {});
  }
}

function lastLines(text: string, n = 3): string {
  return text.trim().split("\n").slice(-n).join(" / ").slice(0, 1000);
}
