/**
 * Budgets in real Chromium against the real daemon and a scripted plugin: the list marks a session near its
 * budget, then over it, and the session page shows spent / budget as a bar, all live as usage arrives.
 */
import assert from "node:assert/strict";
import { startDaemon } from "../../testing/daemon.ts";
import { connectAgent, sessionInfo } from "../../testing/agent.ts";
import { gotoHydrated, launchBrowser, openPage } from "../../testing/chromium.ts";

function reply(id: string, inputTokens: number) {
  return {
    message: {
      role: "assistant",
      id,
      text: "ok",
      thinking: null,
      toolCalls: [],
      toolCallId: null,
      usage: { inputTokens, outputTokens: 0, totalCost: 0 },
    },
  };
}

Deno.test("UI: the list marks a session near and over its budget; the page shows the bar", async () => {
  await using daemon = await startDaemon();
  const browser = await launchBrowser();
  const agent = await connectAgent(daemon, { sessionId: "b-one", session: sessionInfo("b-one") });
  const ui = await openPage(browser, daemon, { signIn: true });
  try {
    const res = await daemon.api("/api/sessions/b-one/budget", {
      method: "PUT",
      body: JSON.stringify({ maxTokens: 1000, onReach: "stop" }),
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    await gotoHydrated(ui, daemon, "/");
    await ui.page.waitForSelector("[data-session='b-one']");
    assert.equal(await ui.page.locator("[data-budget-marker]").count(), 0, "no marker below 80 %");
    agent.send("agent_start");
    agent.send("message_end", reply("a1", 850));
    await ui.page.waitForSelector("[data-session='b-one'] [data-budget-marker='near']:text('85% of budget')");
    agent.send("message_end", reply("a2", 250));
    await ui.page.waitForSelector("[data-session='b-one'] [data-budget-marker='over']:text('over budget')");

    await gotoHydrated(ui, daemon, "/sessions/b-one");
    await ui.page.waitForSelector("[data-budget='over']");
    assert.equal(await ui.page.locator("[data-budget-text]").innerText(), "1.1k / 1.0k tokens");
    assert.equal(await ui.page.locator(".budget-bar").getAttribute("aria-valuenow"), "100");
    assert.match(await ui.page.locator("section.budget").innerText(), /runs are stopped/);
    // Raised live: the bar follows without a reload.
    const up = await daemon.api("/api/sessions/b-one/budget", {
      method: "PUT",
      body: JSON.stringify({ maxTokens: 2200, onReach: "stop" }),
    });
    assert.equal(up.status, 200);
    await up.body?.cancel();
    await ui.page.waitForSelector("[data-budget='ok']");
    assert.equal(await ui.page.locator(".budget-bar").getAttribute("aria-valuenow"), "50");

    // A budget card from the plugin shows its question; approving it from the page raises the budget.
    const text = "Budget reached: 2,200 of 2,200 tokens. Continue with another 2,200 tokens?";
    agent.send("approval_request", {
      approvalId: "bud-1",
      toolCallId: "",
      toolName: "budget",
      args: { text },
      kind: "budget",
    });
    await ui.page.waitForSelector("[data-approval='bud-1'] [data-budget-card]");
    assert.equal(await ui.page.locator("[data-approval='bud-1'] [data-budget-card]").innerText(), text);
    assert.equal(await ui.page.locator("[data-approval='bud-1'] .tool-name").innerText(), "Budget reached");
    await ui.page.locator("[data-approval='bud-1'] button.approve").click();
    await ui.page.waitForSelector("[data-approval='bud-1'][data-state='approved']");
    const view = await (await daemon.api("/api/sessions/b-one/budget")).json();
    assert.equal(view.budget.current.maxTokens, 4400, "raised by its size");
  } finally {
    await agent.close();
    await browser.close();
  }
});
