import assert from "node:assert/strict";
import { freePort, startDaemon, waitFor } from "../../testing/daemon.ts";
import { connectAgent, userEnd } from "../../testing/agent.ts";
import { cliEnv, lvmh } from "../../testing/cli.ts";

const lines = (text: string) => text.split("\n").filter(Boolean).map((l) => JSON.parse(l));

/** A valid 1×1 PNG and the start of a JPEG, base64, as the daemon checks them (magic bytes). */
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const JPEG = btoa(String.fromCharCode(0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46, 0, 1));

Deno.test("cli: exit codes 2 usage, 3 unreachable, 1 refused", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-cli-" });
  try {
    const nowhere = cliEnv(dir, { url: `http://127.0.0.1:${freePort()}`, token: "x".repeat(20) });
    for (const args of [[], ["frobnicate"], ["tail"], ["tail", "a", "--bogus"], ["prompt", "a"]]) {
      const r = await lvmh(nowhere, args);
      assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
      assert.match(r.stderr, /^lvmh: /);
    }
    const help = await lvmh(nowhere, ["--help"]);
    assert.equal(help.code, 0);
    const commands = [
      "login",
      "sessions",
      "tail",
      "prompt",
      "abort",
      "approvals",
      "approve",
      "reject",
      "spawn",
      "stop",
      "token",
    ];
    for (const cmd of commands) {
      assert.ok(help.stdout.includes(cmd), cmd);
      const h = await lvmh(nowhere, [cmd, "--help"]);
      assert.equal(h.code, 0);
      assert.match(h.stdout, new RegExp(`^Usage: lvmh ${cmd}`));
    }
    const r = await lvmh(nowhere, ["sessions"]);
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /cannot reach the daemon/);

    await using d = await startDaemon();
    const wrong = await lvmh(cliEnv(dir, { url: d.url, token: "wrong-token-0000000000" }), ["sessions"]);
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /missing or invalid token/);
    const unknown = await lvmh(cliEnv(dir, d), ["tail", "nope"]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /Session "nope" does not exist/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cli: npm install -g ./cli puts lvmh on the PATH", async () => {
  const prefix = await Deno.makeTempDir({ prefix: "lvmh-cli-npm-" });
  try {
    const cli = new URL("../../cli", import.meta.url).pathname;
    const npm = await new Deno.Command("npm", {
      args: ["install", "-g", "--prefix", prefix, "--offline", "--no-audit", "--no-fund", cli],
      env: { npm_config_cache: `${prefix}/cache` },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(npm.code, 0, new TextDecoder().decode(npm.stderr));
    const env = { ...cliEnv(prefix), PATH: `${prefix}/bin:/usr/bin:/bin` };
    const run = await new Deno.Command("lvmh", { args: ["--help"], env, clearEnv: true, stdout: "piped" })
      .output();
    assert.equal(run.code, 0);
    assert.match(new TextDecoder().decode(run.stdout), /^lvmh: watch and steer pi sessions/);
  } finally {
    await Deno.remove(prefix, { recursive: true });
  }
});

Deno.test("cli: sessions, prompt, abort, tail, login against a daemon with a scripted plugin", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-cli-" });
  // No Docker for this daemon: spawn and stop answer 503, which the CLI reports as a refusal.
  await using d = await startDaemon({ env: { LVMH_CONTAINER_DOCKER_SOCK: `${dir}/no.sock` } });
  // The agent's ws:// URL is accepted as LVMH_URL too.
  const env = cliEnv(dir, { url: d.agentUrl, token: d.token });
  const agent = await connectAgent(d, { sessionId: "cli-1" });
  const idle = await connectAgent(d, { sessionId: "cli-2" });
  await idle.close();
  let last = 0;
  for (let i = 1; i <= 5; i++) last = agent.send("message_end", userEnd(`u${i}`, `hello ${i}`));
  agent.send("tool_execution_start", { toolCallId: "t1", toolName: "bash", args: { command: "ls" } });
  last = agent.send("tool_execution_end", {
    toolCallId: "t1",
    toolName: "bash",
    isError: false,
    resultPreview: "",
  });
  await agent.waitFrame((f) => f.type === "ack" && f.lastSeq === last);
  try {
    await t.step("sessions: table and --json lines, --online", async () => {
      const table = await lvmh(env, ["sessions"]);
      assert.equal(table.code, 0, table.stderr);
      assert.match(table.stdout, /^ID +STATE +NAME/);
      // state, name, repo/cwd, model, last activity, waiting approvals
      assert.match(
        table.stdout,
        /^cli-1 +idle +session cli-1 +\/home\/dev\/project +fake-model +\d+s ago +0$/m,
      );
      assert.match(table.stdout, /cli-2 +offline/);
      const all = lines((await lvmh(env, ["sessions", "--json"])).stdout);
      assert.deepEqual(all.map((s) => s.id).sort(), ["cli-1", "cli-2"]);
      const online = lines((await lvmh(env, ["sessions", "--online", "--json"])).stdout);
      assert.deepEqual(online.map((s) => s.id), ["cli-1"]);
      assert.equal(online[0].lastSeq, last);
    });

    await t.step("prompt (steer, follow-up, stdin) and abort reach the plugin", async () => {
      const r = await lvmh(env, ["prompt", "cli-1", "do the thing"]);
      assert.equal(r.code, 0, r.stderr);
      const promptId = r.stdout.trim();
      const f = await agent.waitFrame((f) => f.type === "prompt" && f.promptId === promptId);
      assert.equal(f.message, "do the thing");
      assert.equal(f.deliverAs, "steer");
      const r2 = await lvmh(env, ["prompt", "cli-1", "-", "--follow-up", "--json"], "from stdin\n");
      assert.equal(r2.code, 0, r2.stderr);
      const { promptId: id2 } = JSON.parse(r2.stdout);
      const f2 = await agent.waitFrame((f) => f.type === "prompt" && f.promptId === id2);
      assert.equal(f2.deliverAs, "followUp");
      assert.match(String(f2.message), /from stdin/);
      assert.equal((await lvmh(env, ["abort", "cli-1"])).code, 0);
      await agent.waitFrame((f) => f.type === "abort");
      const offline = await lvmh(env, ["prompt", "cli-2", "hi"]);
      assert.equal(offline.code, 1);
      assert.match(offline.stderr, /offline/);
      const badImage = await lvmh(env, ["prompt", "cli-1", "hi", "--image", `${dir}/x.txt`]);
      assert.equal(badImage.code, 2);
      // --image repeats: each file reaches the plugin as a {mimeType, data} image of the prompt.
      const png = `${dir}/dot.png`;
      const jpeg = `${dir}/head.JPG`;
      await Deno.writeFile(png, Uint8Array.from(atob(PNG), (c) => c.charCodeAt(0)));
      await Deno.writeFile(jpeg, Uint8Array.from(atob(JPEG), (c) => c.charCodeAt(0)));
      const withImages = await lvmh(env, ["prompt", "cli-1", "look", "--image", png, "--image", jpeg]);
      assert.equal(withImages.code, 0, withImages.stderr);
      const f3 = await agent.waitFrame((f) => f.type === "prompt" && f.promptId === withImages.stdout.trim());
      assert.deepEqual(f3.images, [{ mimeType: "image/png", data: PNG }, {
        mimeType: "image/jpeg",
        data: JPEG,
      }]);
      const missing = await lvmh(env, ["prompt", "cli-1", "hi", "--image", `${dir}/none.png`]);
      assert.equal(missing.code, 2, missing.stderr);
    });

    await t.step("tail: rendered, --json, --from", async () => {
      const r = await lvmh(env, ["tail", "cli-1"]);
      assert.equal(r.code, 0, r.stderr);
      for (let i = 1; i <= 5; i++) assert.ok(r.stdout.includes(`user: hello ${i}\n`), r.stdout);
      assert.match(r.stdout, /> bash \{"command":"ls"\}\n {2}ok bash\n/);
      const json = lines((await lvmh(env, ["tail", "cli-1", "--json"])).stdout);
      assert.deepEqual(json.map((e) => e.seq), [1, 2, 3, 4, 5, 6, 7]);
      const from = lines((await lvmh(env, ["tail", "cli-1", "--json", "--from", "4"])).stdout);
      assert.deepEqual(from.map((e) => e.seq), [4, 5, 6, 7]);
    });

    await t.step("spawn and stop without Docker: refused with the daemon's error", async () => {
      const s = await lvmh(env, ["spawn", "group/project", "--branch", "main", "--ask", "bash,edit"]);
      assert.equal(s.code, 1);
      assert.match(s.stderr, /^lvmh: .*docker/i);
      const bad = await lvmh(env, ["spawn", "not a repo"]);
      assert.equal(bad.code, 1);
      assert.equal((await lvmh(env, ["stop", "cli-1"])).code, 1);
    });

    await t.step("login writes the config file, which later commands use", async () => {
      const bare = cliEnv(dir);
      const wrong = await lvmh(bare, ["login", d.url, "--token", "wrong-token-0000000000"]);
      assert.equal(wrong.code, 1);
      const r = await lvmh(bare, ["login", d.url], `${d.token}\n`);
      assert.equal(r.code, 0, r.stderr);
      const saved = JSON.parse(await Deno.readTextFile(`${dir}/lvmh/config.json`));
      assert.deepEqual(saved, { url: d.url, token: d.token });
      assert.equal((await Deno.stat(`${dir}/lvmh/config.json`)).mode! & 0o777, 0o600);
      const list = lines((await lvmh(bare, ["sessions", "--json"])).stdout);
      assert.equal(list.length, 2);
      // Without XDG_CONFIG_HOME the file is ~/.config/lvmh/config.json, as the issue names it.
      const home = await Deno.makeTempDir({ dir, prefix: "home-" });
      const { XDG_CONFIG_HOME: _, ...plain } = cliEnv(home);
      const r2 = await lvmh(plain, ["login", d.url, "--token", d.token]);
      assert.equal(r2.code, 0, r2.stderr);
      const file = `${home}/.config/lvmh/config.json`;
      assert.deepEqual(JSON.parse(await Deno.readTextFile(file)), { url: d.url, token: d.token });
      assert.equal(lines((await lvmh(plain, ["sessions", "--json"])).stdout).length, 2);
    });

    await t.step({
      name: "approvals, approve, reject",
      fn: async () => {
        agent.send("approval_request", {
          approvalId: "ap-1",
          toolCallId: "tc-1",
          toolName: "bash",
          args: { command: "rm -rf build" },
        });
        const pending = await (async () => {
          for (let i = 0; i < 200; i++) {
            const r = lines((await lvmh(env, ["approvals", "--json"])).stdout);
            if (r.some((a) => a.id === "ap-1")) return r;
          }
          throw new Error("ap-1 never listed");
        })();
        assert.equal(pending.find((a) => a.id === "ap-1").toolName, "bash");
        const table = await lvmh(env, ["approvals"]);
        assert.match(table.stdout, /ap-1 +cli-1 +bash/);
        const listed = await lvmh(env, ["sessions"]);
        assert.match(listed.stdout, /^cli-1 .* 1$/m, "the session's row counts the waiting approval");
        const ok = await lvmh(env, ["approve", "ap-1", "--reason", "fine"]);
        assert.equal(ok.code, 0, ok.stderr);
        const f = await agent.waitFrame((f) => f.type === "approval_decision" && f.approvalId === "ap-1");
        assert.equal(f.decision, "approve");
        assert.equal(f.reason, "fine");
        assert.equal((await lvmh(env, ["approve", "ap-1"])).code, 0, "the same answer again is fine");
        const clash = await lvmh(env, ["reject", "ap-1"]);
        assert.equal(clash.code, 1, "the other answer after one is stored is refused");
        assert.equal((await lvmh(env, ["approve", "nope"])).code, 1);
        // A reject of a waiting call: the agent gets the decision and the reason; --json is the record.
        agent.send("approval_request", {
          approvalId: "ap-2",
          toolCallId: "tc-2",
          toolName: "bash",
          args: { command: "curl evil" },
        });
        await waitFor(async () => {
          const r = lines((await lvmh(env, ["approvals", "--json"])).stdout);
          return r.some((a) => a.id === "ap-2") || null;
        }, "ap-2 listed");
        const no = await lvmh(env, ["reject", "ap-2", "--reason", "not that", "--json"]);
        assert.equal(no.code, 0, no.stderr);
        const record = JSON.parse(no.stdout);
        assert.equal(record.state, "rejected");
        assert.equal(record.reason, "not that");
        const f2 = await agent.waitFrame((f) => f.type === "approval_decision" && f.approvalId === "ap-2");
        assert.equal(f2.decision, "reject");
        assert.equal(f2.reason, "not that");
        assert.deepEqual(lines((await lvmh(env, ["approvals", "--json"])).stdout), [], "nothing waits");
      },
    });

    await t.step({
      name: "token add, list, revoke",
      fn: async () => {
        const add = await lvmh(env, ["token", "add", "ci", "--role", "viewer"]);
        assert.equal(add.code, 0, add.stderr);
        const viewer = cliEnv(dir, { url: d.url, token: add.stdout.trim() });
        assert.equal((await lvmh(viewer, ["sessions"])).code, 0);
        const list = lines((await lvmh(env, ["token", "list", "--json"])).stdout);
        assert.ok(list.some((t) => t.name === "ci" && t.role === "viewer"));
        assert.equal((await lvmh(env, ["token", "revoke", "ci"])).code, 0);
        assert.equal((await lvmh(viewer, ["sessions"])).code, 1);
      },
    });
  } finally {
    await agent.close();
    await Deno.remove(dir, { recursive: true });
  }
});
