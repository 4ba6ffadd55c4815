/**
 * Clone or pull a repository into its named volume through a short-lived helper container.
 *
 * The GitLab token must not reach a container's environment or command line (both show in `docker
 * inspect` and `ps`), an image layer, nor the clone's `.git/config`. So the helper is created with stdin
 * open; the daemon attaches to that stdin (a hijacked connection, `docker/attach.ts`), starts the helper and
 * writes the token as one line. The script reads it into a file on a tmpfs that only the helper sees (memory,
 * gone with the container), and a fixed `credential.helper` given with `git -c` (so it is never written to a
 * config file) prints it to git. The remote URL carries no credentials, and the helper is removed afterwards,
 * on success or failure. User input (URL, branch) reaches the script only as positional parameters, never
 * inside its text.
 */
import type { Engine, Labels } from "./engine.ts";
import { attachStdin } from "./attach.ts";

/** The uid the worker image runs as; the repo volume belongs to it. */
export const WORKER_UID = 1000;

// $1 = clone URL, $2 = branch or "", $3 = "1" when the token comes on stdin.
const SCRIPT = `set -eu
url=$1
branch=$2
with_token=$3
cred=/run/lvmh/credential
export GIT_TERMINAL_PROMPT=0
set -- -c credential.interactive=never -c credential.helper=
if [ "$with_token" = 1 ]; then
  IFS= read -r token || true
  (umask 077; printf '%s' "$token" > "$cred")
  token=
  set -- "$@" -c 'credential.helper=!f() { test "$1" = get || exit 0; echo username=oauth2; printf "password=%s\\n" "$(cat /run/lvmh/credential)"; }; f'
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
  const withToken = o.token !== null && o.token !== "";
  const id = await engine.containerCreate(name, {
    Image: o.image,
    Entrypoint: ["sh"],
    Cmd: ["-c", SCRIPT, "lvmh-clone", o.url, o.branch ?? "", withToken ? "1" : "0"],
    User: `${WORKER_UID}:${WORKER_UID}`,
    WorkingDir: "/",
    Labels: { ...o.labels, "lvmh.kind": "clone" },
    Tty: false,
    OpenStdin: withToken,
    StdinOnce: withToken,
    AttachStdin: withToken,
    HostConfig: {
      NetworkMode: o.network,
      Init: true,
      Mounts: [{ Type: "volume", Source: o.volume, Target: "/workspace" }],
      Tmpfs: { "/run/lvmh": `size=64k,mode=0700,uid=${WORKER_UID},gid=${WORKER_UID}` },
    },
  });
  try {
    if (withToken) {
      // Attach before start, so the line is there when the script reads it.
      const stdin = await attachStdin(engine.socketPath, id);
      try {
        await engine.containerStart(id);
        await stdin.write(new TextEncoder().encode(`${o.token}\n`));
      } finally {
        await stdin.close();
      }
    } else {
      await engine.containerStart(id);
    }
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
