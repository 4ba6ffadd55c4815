import assert from "node:assert/strict";
import {
  api,
  ApiError,
  credentialsAccepted,
  errorText,
  getToken,
  onSignInRequired,
  SignInRequired,
  socketUrl,
} from "./api.ts";
import type { LocalStore } from "./local_store.ts";

function memory(token?: string): LocalStore {
  const m = new Map<string, string>(token ? [["lvmh.token", token]] : []);
  return {
    getItem: (k) => m.get(k) ?? null,
    setItem: (k, v) => void m.set(k, v),
    removeItem: (k) => void m.delete(k),
  };
}

Deno.test("api() sends the bearer token, parses JSON and maps errors", async (t) => {
  const seen: (string | null)[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    seen.push(req.headers.get("authorization"));
    const path = new URL(req.url).pathname;
    if (path === "/ok") return Response.json([{ id: "a" }]);
    if (path === "/offline") return Response.json({ error: 'Session "a" is offline' }, { status: 409 });
    // As the daemon: a presented token that is refused answers 401 even when the cookie would be accepted.
    if (path === "/cookie" && !req.headers.has("authorization")) return Response.json({ by: "cookie" });
    return Response.json({ error: "missing or invalid token" }, { status: 401 });
  });
  const base = `http://127.0.0.1:${server.addr.port}`;
  try {
    await t.step("2xx: parsed body, bearer header", async () => {
      const s = memory("tok en");
      assert.deepEqual(await api(`${base}/ok`, {}, s), [{ id: "a" }]);
      assert.equal(seen.at(-1), "Bearer tok en");
    });
    await t.step("409: ApiError with the daemon's message", async () => {
      const err = await api(`${base}/offline`, { method: "POST", body: "{}" }, memory("t")).catch((e) => e);
      assert.ok(err instanceof ApiError);
      assert.equal(err.status, 409);
      assert.equal(err.message, 'Session "a" is offline');
    });
    await t.step("a refused stored token is forgotten and the call made again on the cookie", async () => {
      const s = memory("stale");
      let told = 0;
      onSignInRequired(() => told++);
      try {
        assert.deepEqual(await api(`${base}/cookie`, { method: "POST", body: "{}" }, s), { by: "cookie" });
        assert.deepEqual(seen.slice(-2), ["Bearer stale", null]);
        assert.equal(getToken(s), null);
        assert.equal(told, 0, "the cookie was accepted: no sign-in prompt");
      } finally {
        onSignInRequired(() => {});
      }
    });
    await t.step("401: SignInRequired, the token is forgotten and the sign-in hook told", async () => {
      const s = memory("stale");
      let told = 0;
      onSignInRequired(() => told++);
      try {
        const err = await api(`${base}/nope`, {}, s).catch((e) => e);
        assert.ok(err instanceof SignInRequired && err instanceof ApiError && err.status === 401);
        assert.equal(errorText(err), "Sign in again.");
        assert.equal(getToken(s), null);
        assert.equal(told, 1);
        await api(`${base}/offline`, { method: "POST", body: "{}" }, s).catch(() => {});
        assert.equal(told, 1, "only a 401 raises the sign-in prompt");
      } finally {
        onSignInRequired(() => {});
      }
    });
  } finally {
    await server.shutdown();
  }
});

Deno.test("socketUrl() picks ws/wss and encodes the token", () => {
  assert.equal(socketUrl({ protocol: "http:", host: "h:1" }, memory()), "ws://h:1/ws");
  assert.equal(socketUrl({ protocol: "https:", host: "h" }, memory("a&b")), "wss://h/ws?token=a%26b");
});

Deno.test("credentialsAccepted() is false only on a 401", async () => {
  let status = 200;
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => Response.json({}, { status }),
  );
  const realFetch = globalThis.fetch;
  // api() uses page-relative paths; point them at the test server.
  globalThis.fetch = (input, init) =>
    realFetch(new URL(String(input), `http://127.0.0.1:${server.addr.port}`), init);
  try {
    const s = memory("t");
    assert.equal(await credentialsAccepted(s), true);
    status = 503;
    assert.equal(await credentialsAccepted(s), true, "unreachable or failing is not a sign-in problem");
    status = 401;
    assert.equal(await credentialsAccepted(s), false);
    assert.equal(getToken(s), null);
  } finally {
    globalThis.fetch = realFetch;
    await server.shutdown();
  }
});
