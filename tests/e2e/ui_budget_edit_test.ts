/**
 * Controlling a budget and steering from the session page, in real Chromium against the real daemon and a
 * scripted plugin: an operator sets, raises and removes the budget with the form under the bar, a viewer sees
 * each change live without a form, the form follows a change made elsewhere; while someone else holds the
 * wheel the composer says who and until when, a plain send is refused (the session stays online on the
 * page) and "Send anyway" sends with force (audited as wheel.override); the list marks the held wheel.
 */
import assert from "node:assert/strict";
import { type Daemon, startDaemon, waitFor } from "../../testing/daemon.ts";
import { connectAgent, sessionInfo } from "../../testing/agent.ts";
import { gotoHydrated, launchBrowser, openPage } from "../../testing/chromium.ts";

const ID = "be-one";

async function named(daemon: Daemon, name: string, role: string): Promise<Daemon> {
  const res = await daemon.api("/api/tokens", { method: "POST", body: JSON.stringify({ name, role }) });
  assert.equal(res.status, 201);
  const { token } = await res.json();
  return { ...daemon, token };
}

Deno.test("UI: the budget form sets, raises and removes; Send anyway passes a held wheel", async (t) => {
  await using daemon = await startDaemon();
  const browser = await launchBrowser();
  const agent = await connectAgent(daemon, { sessionId: ID, session: sessionInfo(ID, { name: "edit me" }) });
  const alice = await named(daemon, "alice", "operator");
  const vera = await named(daemon, "vera", "viewer");
  const carol = await named(daemon, "carol", "operator");
  const pa = await openPage(browser, alice, { signIn: true });
  const pv = await openPage(browser, vera, { signIn: true });
  const as = (d: Daemon, method: string, path: string, body: unknown) =>
    fetch(`${d.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${d.token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const budget = async () => (await (await daemon.api(`/api/sessions/${ID}/budget`)).json()).budget;
  const form = pa.page.locator("[data-budget-form]");
  try {
    await gotoHydrated(pa, alice, `/sessions/${ID}`);
    await gotoHydrated(pv, vera, `/sessions/${ID}`);

    await t.step("an operator sets a budget; a viewer sees it live, read-only", async () => {
      await pa.page.waitForSelector("[data-budget='none'] [data-budget-form]");
      assert.equal(await pv.page.locator("section.budget").count(), 0, "a viewer sees no empty budget");
      await form.locator("input[name='maxCost']").fill("2");
      await form.locator("input[name='maxTokens']").fill("5000");
      await form.locator("select[name='onReach']").selectOption("stop");
      await form.locator("button[type='submit']").click();
      await pa.page.waitForSelector("[data-budget-form] .note:text('Budget set.')");
      assert.deepEqual(await budget(), {
        maxCost: 2,
        maxTokens: 5000,
        onReach: "stop",
        current: { maxCost: 2, maxTokens: 5000 },
        source: "session",
      });
      await pv.page.waitForSelector("[data-budget='ok'] [data-budget-text]:text('$0 / $2.00')");
      assert.match(await pv.page.locator("section.budget").innerText(), /the run stops/);
      assert.equal(await pv.page.locator("[data-budget-form]").count(), 0, "no form for a viewer");
      const audit = await (await daemon.api("/api/audit?limit=1000")).json() as Record<string, unknown>[];
      assert.ok(audit.some((r) => r.action === "budget" && r.actor === "alice"));
    });

    await t.step("raised from the form, the viewer's bar follows", async () => {
      await form.locator("input[name='maxCost']").fill("4");
      await form.locator("select[name='onReach']").selectOption("ask");
      await form.locator("button[type='submit']").click();
      await pv.page.waitForSelector("[data-budget-text]:text('$0 / $4.00 · 0 / 5.0k tokens')");
      assert.match(await pv.page.locator("section.budget").innerText(), /waits for an approval/);
      assert.equal((await budget()).current.maxCost, 4);
      // A bad value is refused on the page, nothing sent.
      await form.locator("input[name='maxTokens']").fill("1.5");
      await form.locator("button[type='submit']").click();
      await pa.page.waitForSelector("[data-budget-form] .note.error:text('whole number')");
      assert.equal((await budget()).maxTokens, 5000);
      await form.locator("button:text('Cancel')").click();
      await waitFor(
        async () => await form.locator("input[name='maxTokens']").inputValue() === "5000",
        "Cancel puts the budget in force back",
      );
    });

    await t.step("a change made elsewhere shows in the form", async () => {
      const res = await as(carol, "PUT", `/api/sessions/${ID}/budget`, { maxCost: 7.5, onReach: "stop" });
      assert.equal(res.status, 200);
      await res.body?.cancel();
      await pa.page.waitForFunction(() =>
        (document.querySelector("[data-budget-form] input[name='maxCost']") as HTMLInputElement)?.value ===
          "7.5"
      );
      assert.equal(await form.locator("input[name='maxTokens']").inputValue(), "");
      assert.equal(await form.locator("select[name='onReach']").inputValue(), "stop");
    });

    await t.step("removed from the form: the viewer's bar goes", async () => {
      await form.locator("[data-budget-remove]").click();
      await pv.page.waitForSelector("section.budget", { state: "detached" });
      await pa.page.waitForSelector("[data-budget='none']");
      assert.equal(await budget(), null);
    });

    await t.step("someone else's wheel: the composer says who; Send anyway passes, audited", async () => {
      const took = await as(carol, "POST", `/api/sessions/${ID}/wheel`, { minutes: 10 });
      assert.equal(took.status, 200);
      await took.body?.cancel();
      await pa.page.waitForSelector("[data-steered-by='carol']:text('carol is steering until')");
      await pa.page.locator("#prompt").fill("my turn please");
      await pa.page.locator("button.steer").click();
      await pa.page.waitForSelector(".composer .note.error:text('carol is steering until')");
      // Refused for the wheel, not because the session went away: the page still takes prompts.
      assert.equal(await pa.page.locator("#prompt").isDisabled(), false);
      assert.equal(await pa.page.locator(".offline-reason").count(), 0);
      await pa.page.locator("[data-send-anyway]").click();
      const p = await agent.waitFrame((f) => f.type === "prompt", "the forced prompt");
      assert.equal(p.message, "my turn please");
      await pa.page.waitForSelector(".composer .note.ok");
      const audit = await (await daemon.api("/api/audit?limit=1000")).json() as Record<string, unknown>[];
      assert.ok(audit.some((r) => r.action === "wheel.override" && r.actor === "alice"));

      // The list marks the held wheel on the session's row; releasing it clears marker and note.
      const list = await openPage(browser, vera, { signIn: true });
      await gotoHydrated(list, vera, "/");
      await list.page.waitForSelector(`[data-session='${ID}'] [data-wheel-marker='carol']`);
      const released = await as(carol, "DELETE", `/api/sessions/${ID}/wheel`, {});
      assert.equal(released.status, 200);
      await released.body?.cancel();
      await list.page.waitForSelector("[data-wheel-marker]", { state: "detached" });
      await pa.page.waitForSelector("[data-steered-by]", { state: "detached" });
      assert.equal(await pa.page.locator("[data-send-anyway]").count(), 0);
      await list.close();
    });
    assert.deepEqual(pv.problems, []);
    assert.deepEqual(pa.problems.filter((p) => p.startsWith("pageerror")), []);
  } finally {
    await agent.close();
    await browser.close();
  }
});
