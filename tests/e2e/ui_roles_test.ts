/**
 * Roles in the UI, in real Chromium against the real daemon and a scripted plugin: a viewer sees the session
 * and the waiting call but no composer, no Approve/Reject, no ask-set form, no spawn panel and no admin
 * pages; an operator approves (the decision reaches the plugin) but gets no audit page; the admin sees the
 * audit page with the actions in order and makes a token whose value is shown once, with a copy button.
 */
import assert from "node:assert/strict";
import { type Daemon, freePort, startDaemon } from "../../testing/daemon.ts";
import { connectAgent, sessionInfo } from "../../testing/agent.ts";
import { gotoHydrated, launchBrowser, openPage, screenshot } from "../../testing/chromium.ts";

const ID = "roles-1";

async function named(daemon: Daemon, name: string, role: string): Promise<Daemon> {
  const res = await daemon.api("/api/tokens", { method: "POST", body: JSON.stringify({ name, role }) });
  assert.equal(res.status, 201);
  const { token } = await res.json();
  // openPage signs in with `daemon.token`: the same daemon seen through another token.
  return { ...daemon, token };
}

Deno.test("UI: roles, the audit page and the tokens page", async (t) => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-ui-" });
  const daemon = await startDaemon({ dataDir, port: freePort() });
  const browser = await launchBrowser();
  const agent = await connectAgent(daemon, { sessionId: ID, session: sessionInfo(ID, { name: "guarded" }) });
  const asViewer = await named(daemon, "vera", "viewer");
  const asOperator = await named(daemon, "olive", "operator");
  const viewer = await openPage(browser, asViewer, { signIn: true });
  const operator = await openPage(browser, asOperator, { signIn: true });
  const admin = await openPage(browser, daemon, { signIn: true });
  try {
    agent.send("agent_start");
    agent.send("message_end", {
      message: {
        role: "assistant",
        id: "a1",
        text: "",
        thinking: null,
        toolCalls: [{ id: "c1", name: "bash", argsJson: JSON.stringify({ command: "make deploy" }) }],
        toolCallId: null,
      },
    });
    agent.send("tool_execution_start", {
      toolCallId: "c1",
      toolName: "bash",
      args: { command: "make deploy" },
    });
    agent.send("approval_request", {
      approvalId: "ap1",
      toolCallId: "c1",
      toolName: "bash",
      args: { command: "make deploy" },
    });

    await t.step("a viewer reads but gets no composer, no approve button and no admin pages", async () => {
      await gotoHydrated(viewer, asViewer, `/sessions/${ID}`);
      await viewer.page.waitForSelector("[data-approval='ap1'][data-state='pending']");
      assert.equal(await viewer.page.locator("[data-approval='ap1'] button.approve").count(), 0);
      assert.equal(await viewer.page.locator("[data-approval='ap1'] button.reject").count(), 0);
      assert.equal(await viewer.page.locator(".composer-dock, textarea").count(), 0);
      assert.match(await viewer.page.locator("[data-read-only]").innerText(), /vera \(viewer\)/);
      assert.equal(await viewer.page.locator(".ask-form").count(), 0, "no ask-set form");
      assert.equal(await viewer.page.locator("[data-me]").getAttribute("data-role"), "viewer");
      assert.equal(await viewer.page.locator("a[href='/audit'], a[href='/tokens']").count(), 0);
      // The a key answers nothing for a viewer.
      await viewer.page.locator("h1.session-name").click();
      await viewer.page.keyboard.press("a");
      assert.equal(await viewer.page.locator("[data-approval='ap1']").getAttribute("data-state"), "pending");
      await screenshot(viewer.page, "roles-viewer");

      await gotoHydrated(viewer, asViewer, "/");
      await viewer.page.waitForSelector(`[data-session='${ID}']`);
      assert.equal(await viewer.page.locator("[data-spawn-panel]").count(), 0, "no spawn panel");
      for (const path of ["/audit", "/tokens"]) {
        const res = await viewer.page.goto(`${daemon.url}${path}`);
        assert.equal(res?.status(), 403, path);
        await viewer.page.waitForSelector("[data-forbidden]");
        assert.equal(await viewer.page.locator("table").count(), 0, `${path} shows no rows`);
      }
      // The only console errors: the browser's own report of the two 403 pages it was sent to.
      assert.deepEqual(viewer.problems.filter((p) => !p.includes("status of 403")), []);
    });

    await t.step("an operator approves; no audit page, no delete, no GitLab connect", async () => {
      await gotoHydrated(operator, asOperator, `/sessions/${ID}`);
      assert.equal(await operator.page.locator(".composer-dock textarea").count(), 1, "the composer");
      await operator.page.click("[data-approval='ap1'] button.approve");
      const decision = await agent.waitFrame((f) => f.type === "approval_decision", "the decision");
      assert.equal(decision.decision, "approve");
      assert.equal(decision.by, "olive");
      await operator.page.waitForSelector("[data-approval='ap1'][data-state='approved']");
      assert.equal(await operator.page.locator(".delete-session").count(), 0);
      assert.equal(await operator.page.locator("a[href='/audit']").count(), 0);
      await gotoHydrated(operator, asOperator, "/");
      await operator.page.waitForSelector("[data-spawn-panel]");
      assert.equal(await operator.page.locator("form.spawn-connect").count(), 0, "no GitLab connect");
      const res = await operator.page.goto(`${daemon.url}/audit`);
      assert.equal(res?.status(), 403);
      assert.deepEqual(operator.problems.filter((p) => !p.includes("status of 403")), []);
    });

    await t.step("the admin sees the audit page with the actions in order", async () => {
      await gotoHydrated(admin, daemon, "/");
      await admin.page.click("a[href='/audit']");
      await admin.page.waitForSelector("html[data-hydrated='1'] table.audit");
      const rows = await admin.page.locator("table.audit tbody tr").evaluateAll((trs) =>
        trs.map((tr) => ({
          action: tr.getAttribute("data-action"),
          text: (tr as HTMLElement).innerText,
        }))
      );
      const acts = rows.filter((r) => r.action !== "signin");
      assert.deepEqual(acts.map((r) => r.action), ["token.add", "token.add", "approve"]);
      assert.match(acts[0].text, /vera/);
      assert.match(acts[1].text, /olive/);
      assert.match(acts[2].text, /olive/);
      assert.match(acts[2].text, new RegExp(ID));
      await screenshot(admin.page, "audit-page");
    });

    await t.step("the admin makes a token: its value is shown once, with a copy button", async () => {
      await admin.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: daemon.url });
      await gotoHydrated(admin, daemon, "/tokens");
      assert.ok(await admin.page.locator("[data-token='vera']").count());
      await admin.page.fill("input[name=token-name]", "tess");
      await admin.page.selectOption("select[name=token-role]", "operator");
      await admin.page.click(".token-form button[type=submit]");
      await admin.page.waitForSelector("[data-new-token='tess']");
      const value = await admin.page.locator("#new-token").inputValue();
      assert.match(value, /^lvmh_[A-Za-z0-9_-]{43}$/);
      await admin.page.click(".new-token button.copy");
      await admin.page.waitForSelector(".new-token button.copy:text('Copied')");
      assert.equal(await admin.page.evaluate(() => navigator.clipboard.readText()), value);
      await admin.page.waitForSelector("[data-token='tess']");
      // The token works, and the page never shows its value again.
      const me = await fetch(`${daemon.url}/api/me`, { headers: { authorization: `Bearer ${value}` } });
      assert.deepEqual(await me.json(), { name: "tess", role: "operator" });
      await gotoHydrated(admin, daemon, "/tokens");
      assert.equal((await admin.page.content()).includes(value), false);
      assert.deepEqual(admin.problems, []);
    });
  } finally {
    await viewer.close();
    await operator.close();
    await admin.close();
    await agent.close();
    await browser.close();
    await daemon.stop();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
