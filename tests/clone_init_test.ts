/**
 * The Kubernetes init container's script (docker/bridge/clone_init.mjs) run by the host's node and git, the
 * way the Pod runs it: it fetches the GitLab token once from a stand-in for the daemon's
 * `/agent/clone-credential`, clones over HTTP with Basic auth, makes the session's branch as its only local
 * one, and reports through the termination log; the token lands in no file of the copy.
 */
import assert from "node:assert/strict";
import { createBareRepo, gitHttpHandler } from "../testing/fixtures/git_http.ts";

const SCRIPT = new URL("../docker/bridge/clone_init.mjs", import.meta.url).pathname;
const PAT = "glpat-clone-init-0123456789";

async function setup() {
  const root = await Deno.makeTempDir({ prefix: "lvmh-clone-init-" });
  await createBareRepo(root, "group/proj", { "README.md": "readme\n" });
  const git = gitHttpHandler({ root, password: PAT });
  const asked: string[] = [];
  let handedOut = false;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const url = new URL(req.url);
    if (url.pathname === "/agent/clone-credential") {
      asked.push(req.headers.get("authorization") ?? "");
      if (handedOut) return Response.json({ error: "not cloning" }, { status: 404 });
      handedOut = true;
      return Response.json({ credential: PAT });
    }
    return git.handle(req);
  });
  const origin = `http://127.0.0.1:${server.addr.port}`;
  await Deno.mkdir(`${root}/claim`);
  await Deno.writeTextFile(`${root}/token`, "agent.s1.hmac\n");
  const run = async (args: string[]) => {
    const out = await new Deno.Command("node", {
      args: [SCRIPT, ...args],
      env: {
        LVMH_URL: `ws://127.0.0.1:${server.addr.port}/agent/ws`,
        LVMH_TOKEN_FILE: `${root}/token`,
        LVMH_CLAIM_DIR: `${root}/claim`,
        LVMH_TERMINATION_LOG: `${root}/termination-log`,
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const message = await Deno.readTextFile(`${root}/termination-log`).catch(() => "");
    return { code: out.code, message, stderr: new TextDecoder().decode(out.stderr) };
  };
  const gitIn = async (...args: string[]) =>
    new TextDecoder().decode(
      (await new Deno.Command("git", { args: ["-C", `${root}/claim/workspace`, ...args], stdout: "piped" })
        .output())
        .stdout,
    ).trim();
  return {
    root,
    url: `${origin}/group/proj.git`,
    asked,
    run,
    gitIn,
    async close() {
      await server.shutdown();
      await Deno.remove(root, { recursive: true });
    },
  };
}

Deno.test("clone_init: clones with the one-shot credential onto the session's branch, then keeps the copy", async () => {
  const s = await setup();
  try {
    const first = await s.run(["clone", s.url, "", "", "lvmh/abcd1234"]);
    assert.equal(first.code, 0, first.stderr);
    const head = await s.gitIn("rev-parse", "HEAD");
    assert.equal(first.message, `lvmh: base main ${head} lvmh/abcd1234`);
    assert.deepEqual(s.asked, ["Bearer agent.s1.hmac"]);
    assert.equal(
      await s.gitIn("for-each-ref", "--format=%(refname)", "refs/heads/"),
      "refs/heads/lvmh/abcd1234",
    );
    assert.equal(await s.gitIn("remote", "get-url", "origin"), s.url);
    assert.ok((await Deno.stat(`${s.root}/claim/pi-sessions`)).isDirectory);
    // The token is nowhere in the claim (config, remotes, logs).
    const found = await new Deno.Command("grep", { args: ["-rl", PAT, `${s.root}/claim`] }).output();
    assert.equal(found.code, 1, new TextDecoder().decode(found.stdout));
    // A resume keeps the copy and asks for nothing.
    const again = await s.run(["keep", s.url, "main", head, "lvmh/abcd1234"]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.message, "lvmh: kept");
    assert.equal(s.asked.length, 1);
  } finally {
    await s.close();
  }
});

Deno.test("clone_init: an unknown branch, and a refused credential, fail with the reason in the termination log", async () => {
  const s = await setup();
  try {
    const bad = await s.run(["clone", s.url, "no-such-branch", "", "lvmh/abcd1234"]);
    assert.equal(bad.code, 1);
    assert.equal(bad.message, "fatal: Remote branch no-such-branch not found");
    // The credential was handed out once: a second clone gets the daemon's refusal, not a hang.
    await Deno.remove(`${s.root}/claim/workspace`, { recursive: true });
    const refused = await s.run(["clone", s.url, "", "", "lvmh/abcd1234"]);
    assert.equal(refused.code, 1);
    assert.match(refused.message, /^lvmh: the daemon gave no clone credential \(HTTP 404\)/);
    const gone = await s.run(["keep", s.url, "main", "", "lvmh/abcd1234"]);
    assert.match(gone.message, /working copy is gone/);
  } finally {
    await s.close();
  }
});
