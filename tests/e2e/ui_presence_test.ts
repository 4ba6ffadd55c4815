/**
 * Who is watching and who is steering, in two real Chromium pages (two people, two tokens) against the real
 * daemon and a scripted plugin: each page lists the other, live, with "typing…" while they type in the
 * composer; the list shows how many have a session open; the wheel one of them takes blocks the other's
 * prompts and aborts (409 with who steers) until forced (audited) or released; and a closed page leaves.
 */
import assert from "node:assert/strict";
import { type Daemon, startDaemon } from "../../testing/daemon.ts";
import { connectAgent, sessionInfo } from "../../testing/agent.ts";
import { gotoHydrated, launchBrowser, openPage } from "../../testing/chromium.ts";

const ID = "p-one";

async function named(daemon: Daemon, name: string): Promise<Daemon> {
  const res = await daemon.api("/api/tokens", {
    method: "POST",
    body: JSON.stringify({ name, role: "operator" }),
  });
  assert.equal(res.status, 201);
  const { token } = await res.json();
  return { ...daemon, token };
}

Deno.test("UI: two people see each other and the typing state; the wheel blocks, force passes", async (t) => {
  await using daemon = await startDaemon();
  const browser = await launchBrowser();
  const agent = await connectAgent(daemon, { sessionId: ID, session: sessionInfo(ID, { name: "shared" }) });
  const alice = await named(daemon, "alice");
  const bob = await named(daemon, "bob");
  const pa = await openPage(browser, alice, { signIn: true });
  const pb = await openPage(browser, bob, { signIn: true });
  const as = (d: Daemon, path: string, body: unknown) =>
    fetch(`${d.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${d.token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  try {
    await t.step("each page lists the other, and the list counts them", async () => {
      await gotoHydrated(pa, alice, `/sessions/${ID}`);
      await gotoHydrated(pb, bob, `/sessions/${ID}`);
      await pa.page.waitForSelector("[data-presence] .watchers:text('Also here: bob')");
      await pb.page.waitForSelector("[data-presence] .watchers:text('Also here: alice')");
      const list = await openPage(browser, daemon, { signIn: true });
      await gotoHydrated(list, daemon, "/");
      await list.page.waitForSelector(`[data-session='${ID}'] [data-watching='2']`);
      await list.close();
    });

    await t.step("typing in the composer shows on the other page, then stops", async () => {
      await pb.page.locator("#prompt").fill("let me try something");
      await pa.page.waitForSelector("[data-presence] .watchers:text('bob (typing…)')");
      await pb.page.locator("#prompt").fill("");
      await pa.page.waitForSelector("[data-presence] .watchers:text-is('Also here: bob')");
    });

    await t.step("the wheel blocks the other's prompt and abort; force passes and is audited", async () => {
      await pa.page.locator("[data-take-wheel]").click();
      await pa.page.waitForSelector("[data-wheel='alice']:text('You are steering')");
      await pb.page.waitForSelector("[data-wheel='alice']:text('alice is steering until')");
      const blocked = await as(bob, `/api/sessions/${ID}/prompt`, { message: "mine now" });
      assert.equal(blocked.status, 409);
      assert.match((await blocked.json()).error, /^alice is steering until \d\d:\d\d/);
      const abort = await as(bob, `/api/sessions/${ID}/abort`, {});
      assert.equal(abort.status, 409);
      await abort.body?.cancel();
      // The holder is not blocked; a forced prompt goes through and is audited.
      const own = await as(alice, `/api/sessions/${ID}/prompt`, { message: "from alice" });
      assert.equal(own.status, 200);
      await own.body?.cancel();
      const forced = await as(bob, `/api/sessions/${ID}/prompt`, { message: "sorry, urgent", force: true });
      assert.equal(forced.status, 200);
      await forced.body?.cancel();
      const audit = await (await daemon.api("/api/audit?limit=1000")).json() as Record<string, unknown>[];
      assert.ok(audit.some((r) => r.action === "wheel.override" && r.actor === "bob"));
      assert.ok(audit.some((r) => r.action === "wheel" && r.actor === "alice"));
      // Someone else may not take a held wheel; releasing it frees the prompt.
      const grab = await as(bob, `/api/sessions/${ID}/wheel`, { minutes: 5 });
      assert.equal(grab.status, 409);
      await grab.body?.cancel();
      await pa.page.locator("[data-release-wheel]").click();
      await pb.page.waitForSelector("[data-wheel]", { state: "detached" });
      const free = await as(bob, `/api/sessions/${ID}/prompt`, { message: "free again" });
      assert.equal(free.status, 200);
      await free.body?.cancel();
    });

    await t.step("a page that closes leaves", async () => {
      await pb.close();
      await pa.page.waitForSelector("[data-presence] .watchers:text('Nobody else is here')");
    });
    assert.deepEqual(pa.problems, []);
  } finally {
    await agent.close();
    await browser.close();
  }
});
