/**
 * The web UI's HTTP routes against the daemon built in-process (no browser): sign-in and sign-out, the page
 * cookie and its limits, static assets, page headers, and what a page shows with and without credentials.
 */
import assert from "node:assert/strict";
import { startInProcess } from "../testing/inproc.ts";
import { ensureBundle } from "../lib/bundle.ts";
import { connectAgent, sessionInfo } from "../testing/agent.ts";

Deno.test("UI routes", async (t) => {
  // main.ts builds the island bundle before it serves; the in-process daemon does not, and a fresh checkout
  // has none.
  await ensureBundle();
  const daemon = await startInProcess();
  const agent = await connectAgent(daemon, {
    sessionId: "r1",
    session: sessionInfo("r1", { name: "route test session" }),
  });
  const origin = daemon.url;
  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    daemon.fetch(path, { method: "POST", body, headers, redirect: "manual" });
  let cookie = "";
  try {
    await t.step("POST /login with a wrong token: 401, no cookie", async () => {
      const res = await post("/login", JSON.stringify({ token: "nope" }), {
        "content-type": "application/json",
        origin,
      });
      assert.equal(res.status, 401);
      assert.match(res.headers.get("content-type") ?? "", /application\/json/);
      assert.equal(res.headers.get("set-cookie"), null);
      assert.deepEqual(await res.json(), { error: "token not accepted" });
    });

    await t.step("POST /login from a foreign origin: 403", async () => {
      const res = await post("/login", JSON.stringify({ token: daemon.token }), {
        "content-type": "application/json",
        origin: "http://evil.example",
      });
      assert.equal(res.status, 403);
      assert.equal(res.headers.get("set-cookie"), null);
      await res.body?.cancel();
    });

    await t.step(
      "POST /login with the token: HttpOnly, SameSite=Strict cookie that is not the token",
      async () => {
        const res = await post("/login", JSON.stringify({ token: daemon.token }), {
          "content-type": "application/json",
          origin,
        });
        assert.equal(res.status, 200);
        assert.deepEqual(await res.json(), { ok: true, name: "bootstrap", role: "admin" });
        const set = res.headers.get("set-cookie") ?? "";
        assert.match(
          set,
          /^lvmh_auth=[0-9a-f]{64}\.[0-9a-f]{64}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+$/,
        );
        assert.ok(!set.includes(daemon.token));
        cookie = set.split(";")[0];
      },
    );

    await t.step("pages: data with the cookie, none without; CSP on both", async () => {
      const withCookie = await daemon.fetch("/", { headers: { cookie } });
      assert.equal(withCookie.status, 200);
      assert.match(withCookie.headers.get("content-security-policy") ?? "", /default-src 'none'/);
      assert.match(await withCookie.text(), /route test session/);
      const session = await daemon.fetch("/sessions/r1", { headers: { cookie } });
      assert.equal(session.status, 200);
      assert.match(await session.text(), /data-island="SessionView"/);
      const without = await daemon.fetch("/sessions/r1");
      assert.equal(without.status, 401);
      assert.match(without.headers.get("content-security-policy") ?? "", /default-src 'none'/);
      const html = await without.text();
      assert.match(html, /data-island="SignIn"/);
      assert.ok(!html.includes("route test session"));
      const forged = await daemon.fetch("/", { headers: { cookie: `lvmh_auth=${daemon.token}` } });
      assert.equal(forged.status, 401, "the raw token is not a valid cookie");
      await forged.body?.cancel();
    });

    await t.step("unknown session: 404 page, the id escaped", async () => {
      const res = await daemon.fetch("/sessions/%3Cscript%3Ealert(1)%3C%2Fscript%3E", {
        headers: { cookie },
      });
      assert.equal(res.status, 404);
      const html = await res.text();
      assert.match(html, /No such session/);
      assert.ok(!html.includes("<script>alert"));
    });

    await t.step("the cookie cannot change state from a foreign origin", async () => {
      const res = await post("/api/sessions/r1/prompt", JSON.stringify({ message: "hi" }), {
        cookie,
        origin: "http://evil.example",
        "content-type": "application/json",
      });
      assert.equal(res.status, 401);
      await res.body?.cancel();
      assert.ok(!agent.frames.some((f) => f.type === "prompt"));
    });

    await t.step("form sign-in (before hydration): 303 to / or to the failure notice", async () => {
      const form = { "content-type": "application/x-www-form-urlencoded", origin };
      const bad = await post("/login", "token=wrong", form);
      assert.equal(bad.status, 303);
      assert.equal(bad.headers.get("location"), "/?signin=failed");
      assert.equal(bad.headers.get("set-cookie"), null);
      const good = await post("/login", `token=${encodeURIComponent(daemon.token)}`, form);
      assert.equal(good.status, 303);
      assert.equal(good.headers.get("location"), "/");
      assert.match(good.headers.get("set-cookie") ?? "", /HttpOnly; SameSite=Strict/);
      const huge = await post("/login", `token=${"x".repeat(10_000)}`, form);
      assert.equal(huge.status, 413);
      await huge.body?.cancel();
    });

    await t.step("DELETE /login clears the cookie", async () => {
      const res = await daemon.fetch("/login", { method: "DELETE", headers: { cookie, origin } });
      assert.equal(res.status, 200);
      assert.match(
        res.headers.get("set-cookie") ?? "",
        /^lvmh_auth=; Path=\/; HttpOnly; SameSite=Strict; Max-Age=0$/,
      );
      await res.body?.cancel();
    });

    await t.step("static assets: types, revalidation, nothing outside static/", async () => {
      const css = await daemon.fetch("/static/style.css");
      assert.equal(css.status, 200);
      assert.equal(css.headers.get("content-type"), "text/css; charset=utf-8");
      assert.equal(css.headers.get("x-content-type-options"), "nosniff");
      const etag = css.headers.get("etag") ?? "";
      await css.body?.cancel();
      const again = await daemon.fetch("/static/style.css", { headers: { "if-none-match": etag } });
      assert.equal(again.status, 304);
      const js = await daemon.fetch("/static/client.js");
      assert.equal(js.status, 200);
      assert.equal(js.headers.get("content-type"), "text/javascript; charset=utf-8");
      assert.match(await js.text(), /data-island|hydrated/);
      for (
        const path of ["/static/..%2Fdeno.json", "/static/.hidden.css", "/static/nope.css", "/static/x.ts"]
      ) {
        const res = await daemon.fetch(path);
        assert.equal(res.status, 404, path);
        await res.body?.cancel();
      }
    });
  } finally {
    await agent.close();
    await daemon.stop();
  }
});
