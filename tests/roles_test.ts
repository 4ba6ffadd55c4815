/**
 * Roles and named tokens: every route × {no token, wrong, revoked, viewer, operator, admin, agent} answers as the
 * role table says; revocation closes open sockets; the audit log records each action in order and only admins
 * read it; a burst of wrong tokens is slowed while a valid token goes straight through; the token command works
 * against a real data dir while the daemon runs.
 */
import assert from "node:assert/strict";
import { routes } from "../routes/_table.ts";
import { requiredRole } from "../lib/router.ts";
import { type InProcessDaemon, startInProcess } from "../testing/inproc.ts";
import { connectAgent, connectBrowser } from "../testing/agent.ts";
import { waitFor } from "../testing/daemon.ts";
import { TEST_STORE_POSTGRES, testDatabaseUrl } from "../testing/test_store.ts";

type Who = "none" | "wrong" | "revoked" | "viewer" | "operator" | "admin" | "agent";
const RANK = { agent: 0, viewer: 1, operator: 2, admin: 3 } as const;

async function makeTokens(d: InProcessDaemon): Promise<Record<Who, string | null>> {
  const add = async (name: string, role: string) => {
    const res = await d.api("/api/tokens", { method: "POST", body: JSON.stringify({ name, role }) });
    assert.equal(res.status, 201, `create ${name}`);
    const body = await res.json();
    assert.deepEqual(Object.keys(body).sort(), ["name", "role", "token"]);
    assert.match(body.token, /^lvmh_[A-Za-z0-9_-]{43}$/);
    return body.token as string;
  };
  const revoked = await add("gone", "admin");
  const del = await d.api("/api/tokens/gone", { method: "DELETE" });
  assert.equal(del.status, 200);
  await del.body?.cancel();
  return {
    none: null,
    wrong: "lvmh_wrongwrongwrongwrongwrongwrongwrongwrongw",
    revoked,
    viewer: await add("vera", "viewer"),
    operator: await add("otto", "operator"),
    admin: await add("ada", "admin"),
    agent: await add("laptop", "agent"),
  };
}

function expected(auth: string, need: string, who: Who): "401" | "403" | "ok" {
  if (who === "none" || who === "wrong" || who === "revoked") return "401";
  if (auth === "agent") return who === "admin" || who === "agent" ? "ok" : "403";
  if (who === "agent") return "403";
  return RANK[who] >= RANK[need as keyof typeof RANK] ? "ok" : "403";
}

Deno.test("roles: every route × every kind of caller", async (t) => {
  // Hundreds of deliberate failures from one address: keep them 401s here; slowing is tested below.
  await using d = await startInProcess({ env: { LVMH_SIGNIN_LIMIT: "100000" } });
  const tokens = await makeTokens(d);
  const agent = await connectAgent(d, { sessionId: "roles-s1" });
  // The changes routes wait for this session's plugin to answer: refuse each at once (the route's error is
  // not a 401 or a 403, which is all this test reads), instead of letting every caller wait out the timeout.
  agent.socket.addEventListener("message", (e) => {
    const frame = JSON.parse(String(e.data));
    if (frame.type !== "changes") return;
    agent.send("command_result", { commandId: frame.commandId, ok: false, error: "no repository here" });
  });
  try {
    for (const route of routes.filter((r) => r.auth === "token" || r.auth === "agent")) {
      const path = route.path.replace(/:id\b/g, "roles-s1").replace(/:name\b/, "nobody");
      for (const method of Object.keys(route.handler) as (keyof typeof route.handler)[]) {
        const need = requiredRole(route, method);
        await t.step(
          `${method} ${route.path} (needs ${route.auth === "agent" ? "agent or admin" : need})`,
          async () => {
            for (const who of Object.keys(tokens) as Who[]) {
              const headers = new Headers();
              if (tokens[who]) headers.set("authorization", `Bearer ${tokens[who]}`);
              if (path.endsWith("ws")) headers.set("upgrade", "not-websocket");
              const body = method === "GET" || method === "DELETE" ? undefined : "{}";
              if (body) headers.set("content-type", "application/json");
              const res = await d.fetch(path, { method, headers, body });
              // A stream that was let in never ends: its status is the answer.
              const streaming = (res.headers.get("content-type") ?? "").startsWith("text/event-stream");
              const text = streaming ? (await res.body?.cancel(), "") : await res.text();
              const want = expected(route.auth, need, who);
              if (want === "ok") {
                assert.ok(res.status !== 401 && res.status !== 403, `${who}: got ${res.status} ${text}`);
              } else {
                assert.equal(String(res.status), want, `${who}: ${text}`);
                assert.equal(typeof JSON.parse(text).error, "string");
              }
              assert.ok(!tokens.admin || !text.includes(tokens.admin), "no token value in any answer");
            }
          },
        );
      }
    }

    await t.step("GET /api/tokens lists names and roles, never a value or hash", async () => {
      const res = await d.fetch("/api/tokens", { headers: { authorization: `Bearer ${tokens.admin}` } });
      const list = await res.json();
      assert.deepEqual(list.map((x: { name: string }) => x.name), ["gone", "vera", "otto", "ada", "laptop"]);
      for (const x of list) {
        assert.deepEqual(Object.keys(x).sort(), ["createdAt", "lastUsedAt", "name", "revokedAt", "role"]);
      }
      assert.ok(list.find((x: { name: string }) => x.name === "ada").lastUsedAt, "lastUsedAt recorded");
    });

    await t.step("a named agent token opens the plugin socket; /api/me names the caller", async () => {
      const a = await connectAgent({ agentUrl: d.agentUrl, token: tokens.agent! }, {
        sessionId: "roles-laptop",
      });
      assert.equal(a.welcome.type, "welcome");
      await a.close();
      const me = await d.fetch("/api/me", { headers: { authorization: `Bearer ${tokens.operator}` } });
      assert.deepEqual(await me.json(), { name: "otto", role: "operator" });
    });
  } finally {
    await agent.close();
  }
});

Deno.test("roles: revoking a token closes its open /ws, /agent/ws and event stream at once", async () => {
  await using d = await startInProcess();
  const create = async (name: string, role: string) =>
    (await (await d.api("/api/tokens", { method: "POST", body: JSON.stringify({ name, role }) })).json())
      .token;
  const viewer = await create("watcher", "viewer");
  const laptop = await create("laptop", "agent");
  const browser = await connectBrowser(`ws://127.0.0.1:${d.port}/ws?token=${encodeURIComponent(viewer)}`);
  const stream = await fetch(`${d.url}/api/stream`, { headers: { authorization: `Bearer ${viewer}` } });
  assert.equal(stream.status, 200);
  const streamEnded = (async () => {
    for await (const _ of stream.body!) { /* read until the daemon ends it */ }
  })();
  const plugin = await connectAgent({ agentUrl: d.agentUrl, token: laptop }, { sessionId: "rev-1" });
  for (const name of ["watcher", "laptop"]) {
    const res = await d.api(`/api/tokens/${name}`, { method: "DELETE" });
    assert.equal(res.status, 200);
    await res.body?.cancel();
  }
  assert.equal((await browser.closed).code, 1008);
  assert.equal((await plugin.closed).code, 1008);
  await streamEnded; // the event stream it opened ended too
  const again = await d.fetch("/api/sessions", { headers: { authorization: `Bearer ${viewer}` } });
  assert.equal(again.status, 401, "a revoked token is like an unknown one");
  await again.body?.cancel();
  const twice = await d.api("/api/tokens/watcher", { method: "DELETE" });
  assert.equal(twice.status, 404);
  await twice.body?.cancel();
});

Deno.test("audit: each human action in order; an operator cannot read it", async () => {
  await using d = await startInProcess();
  const operator = (await (await d.api("/api/tokens", {
    method: "POST",
    body: JSON.stringify({ name: "otto", role: "operator" }),
  })).json()).token;
  const as = (path: string, init: RequestInit = {}) =>
    d.fetch(path, {
      ...init,
      headers: { authorization: `Bearer ${operator}`, "content-type": "application/json" },
    });
  const a = await connectAgent(d, { sessionId: "aud-1" });
  try {
    const calls: [string, RequestInit][] = [
      ["/api/sessions/aud-1/prompt", { method: "POST", body: JSON.stringify({ message: "fix the build" }) }],
      ["/api/sessions/aud-1/abort", { method: "POST" }],
      ["/api/sessions/aud-1/policy", { method: "PUT", body: JSON.stringify({ ask: ["bash"] }) }],
    ];
    for (const [path, init] of calls) {
      const res = await as(path, init);
      assert.equal(res.status, 200, path);
      await res.body?.cancel();
    }
    a.send("approval_request", { approvalId: "ap", toolCallId: "c", toolName: "bash", args: {} });
    await waitFor(
      async () => (await (await d.api("/api/approvals?state=pending")).json()).length === 1,
      "pending",
    );
    const decided = await as("/api/approvals/ap", {
      method: "POST",
      body: JSON.stringify({ decision: "reject" }),
    });
    assert.equal(decided.status, 200);
    await decided.body?.cancel();
    const denied = await as("/api/audit");
    assert.equal(denied.status, 403);
    await denied.body?.cancel();
    const wrong = await d.fetch("/api/sessions", {
      headers: { authorization: "Bearer nope-nope-nope-nope" },
    });
    await wrong.body?.cancel();

    const rows = await (await d.api("/api/audit?after=0&limit=1000")).json();
    const mine = rows.filter((r: { actor: string }) => r.actor === "otto" || r.actor === "unknown");
    assert.deepEqual(mine.map((r: { action: string }) => r.action), [
      "prompt",
      "abort",
      "policy",
      "reject",
      "auth.failed",
    ]);
    assert.equal(mine[0].detail.message, "fix the build");
    assert.equal(mine[0].sessionId, "aud-1");
    assert.equal(mine[0].role, "operator");
    assert.equal(rows[0].action, "token.add", "the token's creation came first");
    const after = await (await d.api(`/api/audit?after=${rows.at(-2).id}`)).json();
    assert.equal(after.length, 1, "after= pages on");
    for (const method of ["DELETE", "PUT", "POST"]) {
      const res = await d.api("/api/audit", { method, body: "{}" });
      assert.equal(res.status, 405, `${method} /api/audit: the log cannot be edited`);
      await res.body?.cancel();
    }
  } finally {
    await a.close();
  }
});

Deno.test("sign-in failures: a burst of 1,000 wrong tokens gets 429s; a valid token is never slowed", async () => {
  await using d = await startInProcess();
  const statuses = new Map<number, number>();
  let validMs = 0;
  for (let i = 0; i < 1000; i++) {
    const res = await d.fetch("/api/sessions", {
      headers: { authorization: `Bearer wrong-${i}-xxxxxxxxxxxx` },
    });
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    if (res.status === 429) assert.ok(Number(res.headers.get("retry-after")) >= 1);
    await res.body?.cancel();
    if (i === 500) {
      const t0 = performance.now();
      const ok = await d.api("/api/sessions");
      validMs = performance.now() - t0;
      assert.equal(ok.status, 200, "the valid token in the middle of the burst");
      await ok.body?.cancel();
    }
  }
  assert.equal(statuses.get(401), 10, "the first ten failures are plain 401s");
  assert.equal(statuses.get(429), 990);
  assert.ok(validMs < 200, `valid request took ${validMs.toFixed(1)} ms`);
  const audit = await (await d.api("/api/audit?limit=1000")).json();
  const failures = audit.filter((r: { action: string }) => r.action === "auth.failed").length;
  assert.ok(failures <= 12, `failures while slowed are not each written (${failures} rows)`);
  assert.ok(!d.output().includes("wrong-1-"), "no token value is logged");
});

Deno.test("deno task token: add, use, list and revoke against the data dir while the daemon runs", async () => {
  await using d = await startInProcess();
  // Where the daemon keeps its tokens: its data dir, or the shared database it runs on.
  const store: Record<string, string> = TEST_STORE_POSTGRES
    ? { LVMH_DATABASE_URL: await testDatabaseUrl(d.dataDir) }
    : {};
  const run = async (...args: string[]) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", new URL("../scripts/token.ts", import.meta.url).pathname, ...args],
      env: { LVMH_DATA_DIR: d.dataDir, NO_COLOR: "1", ...store },
      stdout: "piped",
      stderr: "piped",
    }).output();
    return { code: out.code, out: new TextDecoder().decode(out.stdout).trim() };
  };
  const added = await run("add", "ci-bot", "--role", "viewer");
  assert.equal(added.code, 0);
  assert.match(added.out, /^lvmh_/);
  const res = await d.fetch("/api/sessions", { headers: { authorization: `Bearer ${added.out}` } });
  assert.equal(res.status, 200, "the running daemon accepts a token the command added");
  await res.body?.cancel();
  assert.equal((await run("add", "ci-bot", "--role", "viewer")).code, 1, "a taken name is refused");
  assert.equal((await run("add", "x", "--role", "king")).code, 2, "bad usage");
  const list = await run("list");
  assert.match(list.out, /^ci-bot\tviewer\tactive/m);
  assert.ok(!list.out.includes(added.out), "list never shows a value");
  const browser = await connectBrowser(`ws://127.0.0.1:${d.port}/ws?token=${added.out}`);
  assert.equal((await run("revoke", "ci-bot")).code, 0);
  assert.equal((await browser.closed).code, 1008, "the daemon closes sockets of a token the command revoked");
  const gone = await d.fetch("/api/sessions", { headers: { authorization: `Bearer ${added.out}` } });
  assert.equal(gone.status, 401);
  await gone.body?.cancel();
  assert.equal((await run("revoke", "ci-bot")).code, 1);
});
