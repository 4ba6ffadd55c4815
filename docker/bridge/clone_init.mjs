#!/usr/bin/env node
/**
 * The init container of a Kubernetes worker Pod: makes the session's working copy in its claim, on the
 * session's own branch, before the worker starts.
 *
 *   node clone_init.mjs <clone|keep> <url> <base branch or ""> <base sha or ""> <session branch>
 *
 * Environment: LVMH_URL (the agent socket; the credential route is on the same origin), LVMH_TOKEN_FILE (the
 * session token, a Secret file), LVMH_CLAIM_DIR (the claim; `workspace/` and `pi-sessions/` are made in it).
 *
 * The GitLab token is fetched once from the daemon with the session token (`GET /agent/clone-credential`,
 * answered only while this session clones), kept in a file on this container's own /tmp, and given to git
 * by a fixed credential helper on the command line (`git -c`), never in a config file, the URL, an
 * argument or the environment. What happened goes to the termination log, which the kubelet puts into the
 * container's `terminated.message`: `lvmh: base <branch> <sha> <session branch>`, `lvmh: kept`, or the
 * error (git's last lines).
 */
import fs from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";

const [mode, url, baseArg, shaArg, branch] = process.argv.slice(2);
const env = process.env;
const claim = env.LVMH_CLAIM_DIR ?? "/claim";
const work = path.join(claim, "workspace");
const sessions = path.join(claim, "pi-sessions");
const credFile = "/tmp/lvmh-credential";
const TERMINATION_LOG = env.LVMH_TERMINATION_LOG ?? "/dev/termination-log";

/** Say it on stderr and in the termination log (the last 2,000 bytes: the kubelet keeps no more). */
function report(text) {
  process.stderr.write(`${text}\n`);
  try {
    fs.writeFileSync(TERMINATION_LOG, Buffer.from(text).subarray(-2000));
  } catch {
    // No termination log (run by hand): stderr says it.
  }
}

function fail(text) {
  try {
    fs.rmSync(credFile, { force: true });
  } catch { /* nothing to remove */ }
  report(text);
  process.exit(1);
}

const gitEnv = {
  ...env,
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_TERMINAL_PROMPT: "0",
};
/** What git said when it last failed (shown when a step that may fail did not find what it looked for). */
let lastError = "";
let credentialArgs = [
  "-c",
  "credential.interactive=never",
  "-c",
  "credential.helper=",
];

/** Run git with lvmh's fixed options; its stdout, or the end with git's stderr. */
function git(args, o = {}) {
  const r = spawnSync(
    "git",
    [
      "-c",
      "core.fsmonitor=false",
      "-c",
      "core.hooksPath=/dev/null",
      // The kubelet makes a subPath's directory as root (group: the fsGroup), so git would call it dubious.
      "-c",
      `safe.directory=${work}`,
      ...credentialArgs,
      ...args,
    ],
    {
      cwd: o.cwd ?? work,
      env: gitEnv,
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  if (r.status !== 0) {
    lastError = `${r.stderr ?? ""}${r.error ? String(r.error) : ""}`.trim();
  }
  if (r.status !== 0 && !o.allowFail) {
    const lines = `${r.stderr ?? ""}${r.error ? String(r.error) : ""}`.trim()
      .split("\n").slice(-20).join("\n");
    fail(
      o.failure ? `${o.failure}\n${lines}` : lines || `git ${args[0]} failed`,
    );
  }
  return r.status === 0 ? r.stdout.trim() : null;
}

/** The one-shot credential from the daemon, retried while the daemon restarts. */
async function fetchCredential() {
  const origin = new URL(env.LVMH_URL);
  origin.protocol = origin.protocol === "wss:" ? "https:" : "http:";
  const target = new URL("/agent/clone-credential", origin);
  const token = fs.readFileSync(
    env.LVMH_TOKEN_FILE ?? "/run/lvmh/token",
    "utf8",
  ).trim();
  const deadline = Date.now() + 120_000;
  for (let wait = 250;; wait = Math.min(wait * 2, 5000)) {
    let res;
    try {
      res = await fetch(target, {
        headers: { authorization: `Bearer ${token}` },
      });
    } catch (error) {
      if (Date.now() > deadline) {
        fail(
          `lvmh: the daemon at ${target.origin} is unreachable: ${error?.message}`,
        );
      }
      await new Promise((r) => setTimeout(r, wait));
      continue;
    }
    if (res.ok) return (await res.json()).credential ?? null;
    if (res.status < 500 || Date.now() > deadline) {
      fail(
        `lvmh: the daemon gave no clone credential (HTTP ${res.status}): ${(await res.text()).slice(0, 300)}`,
      );
    }
    await new Promise((r) => setTimeout(r, wait));
  }
}

async function main() {
  if (mode !== "clone" && mode !== "keep") fail(`lvmh: unknown mode ${mode}`);
  fs.mkdirSync(work, { recursive: true });
  fs.mkdirSync(sessions, { recursive: true });
  if (fs.existsSync(path.join(work, ".git"))) {
    if (mode === "keep" || shaArg) {
      report("lvmh: kept");
      return;
    }
    // A copy nobody recorded is what a Pod deleted mid-clone left: no agent ever ran on it.
    for (const entry of fs.readdirSync(work)) {
      fs.rmSync(path.join(work, entry), { recursive: true, force: true });
    }
  } else if (mode === "keep") {
    fail("lvmh: the session's working copy is gone from its claim");
  }
  const credential = await fetchCredential();
  if (credential) {
    fs.writeFileSync(credFile, credential, { mode: 0o600 });
    credentialArgs = [
      ...credentialArgs,
      "-c",
      'credential.helper=!f() { test "$1" = get || exit 0; echo username=oauth2; printf "password=%s\\n" "$(cat /tmp/lvmh-credential)"; }; f',
    ];
  }
  console.error("lvmh: cloning");
  git(["clone", "-q", "--no-checkout", "--", url, work], {
    cwd: claim,
    failure: `git failed for ${url}`,
  });
  fs.rmSync(credFile, { force: true });
  credentialArgs = [
    "-c",
    "credential.interactive=never",
    "-c",
    "credential.helper=",
  ];
  let base = baseArg;
  if (!base) {
    // The clone's own HEAD names the remote's default branch (older git sets no refs/remotes/origin/HEAD).
    const head = git(["symbolic-ref", "--short", "HEAD"], { allowFail: true }) ??
      git(["symbolic-ref", "--short", "refs/remotes/origin/HEAD"], {
        allowFail: true,
      });
    if (!head) {
      fail(
        `lvmh: the repository has no default branch${lastError ? `: ${lastError}` : ""}`,
      );
    }
    base = head.replace(/^origin\//, "");
  }
  if (
    git(["check-ref-format", `refs/heads/${base}`], { allowFail: true }) ===
      null
  ) {
    fail(`lvmh: invalid branch name: ${base}`);
  }
  const sha = shaArg ||
    git(
      ["rev-parse", "-q", "--verify", `refs/remotes/origin/${base}^{commit}`],
      { allowFail: true },
    );
  if (!sha) fail(`fatal: Remote branch ${base} not found`);
  git(["checkout", "-q", "--no-track", "-b", branch, sha]);
  // The session's branch is its only local one (the clone made one for the remote's HEAD).
  const heads = git(["for-each-ref", "--format=%(refname)", "refs/heads/"]) ??
    "";
  for (
    const ref of heads.split("\n").filter((r) => r && r !== `refs/heads/${branch}`)
  ) {
    git(["update-ref", "-d", ref]);
  }
  report(`lvmh: base ${base} ${git(["rev-parse", "HEAD"])} ${branch}`);
}

main().catch((error) => fail(`lvmh: the clone failed: ${error?.message ?? error}`));
