import assert from "node:assert/strict";
import { routes } from "../routes/_table.ts";
import { startInProcess } from "../testing/inproc.ts";
import { connectAgent, sessionInfo } from "../testing/agent.ts";
import { agentToken, cookieValue } from "../lib/auth.ts";

const SECRET_NAME = "secret-session-name-7f3a";

/** A concrete URL path for a route pattern, with its params pointing at the test session. */
function concrete(path: string): string {
  return path.replace(/:id\b/g, "auth-s1").replace(/:\w+\*?/g, "x");
}

Deno.test("auth: every route in the table is authenticated", async (t) => {
  // Dozens of wrong credentials from one address on purpose: the sign-in throttle is not what this checks.
  await using d = await startInProcess({ env: { LVMH_SIGNIN_LIMIT: "100000" } });
  const agent = await connectAgent(d, {
    sessionId: "auth-s1",
    session: sessionInfo("auth-s1", { name: SECRET_NAME }),
  });
  agent.send("message_end", {
    message: { role: "user", id: "u", text: SECRET_NAME, thinking: null, toolCalls: [], toolCallId: null },
  });

  for (const route of routes) {
    const path = concrete(route.path);
    for (const method of Object.keys(route.handler)) {
      await t.step(`${method} ${route.path} (${route.auth})`, async () => {
        const wrongs: [string, HeadersInit][] = [
          ["no credentials", {}],
          ["wrong bearer", { authorization: "Bearer wrong-token-000000000" }],
          ["malformed header", { authorization: d.token }],
          ["wrong cookie", { cookie: `lvmh_auth=${"0".repeat(64)}` }],
          ["right cookie, foreign origin", {
            cookie: `lvmh_auth=${await cookieValue(d.token)}`,
            origin: "http://evil.example",
          }],
        ];
        for (const [what, headers] of wrongs) {
          const h = new Headers(headers);
          if (route.path.endsWith("ws")) {
            h.set("upgrade", "websocket");
            h.set("connection", "Upgrade");
            h.set("sec-websocket-key", btoa("0123456789abcdef"));
            h.set("sec-websocket-version", "13");
          }
          const body = method === "GET" || method === "DELETE" ? undefined : "{}";
          if (body) h.set("content-type", "application/json");
          const res = await d.fetch(path + (what === "no credentials" ? "?token=wrong" : ""), {
            method,
            headers: h,
            body,
          });
          const text = await res.text();
          if (route.auth === "token" || route.auth === "agent") {
            assert.equal(res.status, 401, `${what}: ${text}`);
            assert.match(res.headers.get("content-type") ?? "", /application\/json/);
            assert.ok(JSON.parse(text).error, what);
          } else {
            assert.notEqual(res.status, 101, `${what}: no upgrade without credentials`);
            assert.ok(!text.includes(SECRET_NAME), `${what}: ${route.path} leaked session data`);
          }
        }
      });
    }
  }

  await t.step("public routes are static assets, sign-in, health and self-checking hooks only", async () => {
    for (const r of routes.filter((r) => r.auth === "public")) {
      if (r.path === "/login") continue;
      if (r.path === "/api/health") {
        // Load balancers carry no token: the answer says whether this replica serves, and nothing more.
        assert.deepEqual(Object.keys(r.handler), ["GET"], r.path);
        const res = await d.fetch("/api/health");
        assert.equal(res.status, 200);
        assert.equal(res.headers.get("cache-control"), "no-store");
        const body = await res.json();
        assert.deepEqual(Object.keys(body).sort(), ["database", "holderOf", "ok", "replica"]);
        assert.equal(body.ok, true);
        assert.equal(body.database, "sqlite");
        assert.equal(body.holderOf, 1, "the test's one plugin socket is held here");
        assert.match(body.replica, /^[A-Za-z0-9._:-]+-\d+$/, "host name and pid by default");
        continue;
      }
      // Each hook checks its own credentials (tests/hooks_*): an operator token, or the GitLab hook secret.
      if (r.path === "/hooks/generic" || r.path === "/hooks/gitlab") {
        assert.deepEqual(Object.keys(r.handler), ["POST"], r.path);
        continue;
      }
      assert.match(r.path, /^\/(static\/|favicon|manifest|robots)/, r.path);
      assert.deepEqual(Object.keys(r.handler), ["GET"], r.path);
    }
  });

  await t.step("sign-in with a wrong token sets no cookie", async () => {
    for (
      const init of <RequestInit[]> [
        {
          body: JSON.stringify({ token: "wrong-token-000000000" }),
          headers: { "content-type": "application/json" },
        },
        {
          body: "token=wrong-token-000000000",
          headers: { "content-type": "application/x-www-form-urlencoded" },
        },
      ]
    ) {
      const res = await d.fetch("/login", { method: "POST", redirect: "manual", ...init });
      await res.body?.cancel();
      assert.ok(res.status === 401 || res.status === 303, String(res.status));
      assert.equal(res.headers.get("set-cookie"), null);
    }
  });

  await t.step("the right token works as bearer, query and same-origin cookie", async () => {
    for (
      const init of <RequestInit[]> [
        { headers: { authorization: `Bearer ${d.token}` } },
        { headers: { cookie: `lvmh_auth=${await cookieValue(d.token)}` } },
      ]
    ) {
      const res = await d.fetch("/api/sessions", init);
      assert.equal(res.status, 200);
      await res.body?.cancel();
    }
    const q = await d.fetch(`/api/sessions?token=${encodeURIComponent(d.token)}`);
    assert.equal(q.status, 200);
    await q.body?.cancel();
  });

  await t.step("a session-scoped agent token opens the plugin socket for its session only", async () => {
    const scoped = await agentToken(d.token, "scoped-1");
    for (const path of ["/api/sessions", "/api/sessions/auth-s1/events", "/ws"]) {
      const res = await d.fetch(path, { headers: { authorization: `Bearer ${scoped}` } });
      assert.equal(res.status, 403, `${path}: an agent token opens the plugin socket only`);
      await res.body?.cancel();
    }
    const forged = await d.fetch("/agent/ws", {
      headers: { authorization: `Bearer ${scoped.replace("scoped-1", "auth-s1")}`, upgrade: "websocket" },
    });
    assert.equal(forged.status, 401, "the HMAC binds the token to its session id");
    await forged.body?.cancel();
    const own = await connectAgent({ agentUrl: d.agentUrl, token: scoped }, { sessionId: "scoped-1" });
    assert.equal(own.welcome.lastSeq, 0);
    await own.close();
    const s = new WebSocket(
      d.agentUrl,
      { headers: { authorization: `Bearer ${scoped}` } } as unknown as string[],
    );
    const frames: { type: string; code?: string }[] = [];
    s.onmessage = (e) => frames.push(JSON.parse(e.data));
    const closed = new Promise<CloseEvent>((r) => s.onclose = r);
    await new Promise((r) => s.onopen = r);
    s.send(
      JSON.stringify({
        v: 1,
        type: "hello",
        sessionId: "auth-s1",
        seq: 0,
        ts: 1,
        session: sessionInfo("auth-s1"),
      }),
    );
    assert.equal((await closed).code, 1008, "closed for speaking for another session");
    assert.deepEqual(frames.map((f) => f.code ?? f.type), ["wrong_session"], "no welcome");
  });

  await t.step("a Kubernetes helper's one-off token opens no agent socket", async () => {
    const helper = await agentToken(d.token, "helper-0b7c");
    const res = await d.fetch("/agent/ws", {
      headers: { authorization: `Bearer ${helper}`, upgrade: "websocket", connection: "upgrade" },
    });
    assert.equal(res.status, 403);
    assert.match(await res.text(), /opens no agent socket/);
  });

  await t.step("the token never appears in the daemon's output", () => {
    assert.ok(!d.output().includes(d.token));
  });
  await agent.close();
});
