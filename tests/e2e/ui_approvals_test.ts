/**
 * Tool approvals in real Chromium against the real daemon and a scripted plugin: the card appears live with
 * readable arguments and the tool card reads "awaiting approval"; Approve reaches the plugin socket; the card
 * then says who decided and that the answer was delivered; "N waiting" and the list's mark update in another
 * tab; the keyboard answers (`r`, `a`); an answer typed in pi's terminal shows as such; the ask-set control
 * reaches the plugin; the card fits a phone.
 */
import assert from "node:assert/strict";
import { freePort, startDaemon, waitFor } from "../../testing/daemon.ts";
import { connectAgent, sessionInfo } from "../../testing/agent.ts";
import { gotoHydrated, launchBrowser, openPage, screenshot } from "../../testing/chromium.ts";

const ID = "gated-1";

function assistantCalling(id: string, calls: { id: string; name: string; args: unknown }[]) {
  return {
    message: {
      role: "assistant",
      id,
      text: "",
      thinking: null,
      toolCalls: calls.map((c) => ({ id: c.id, name: c.name, argsJson: JSON.stringify(c.args) })),
      toolCallId: null,
    },
  };
}

Deno.test("UI: tool approvals", async (t) => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-ui-" });
  const daemon = await startDaemon({ dataDir, port: freePort() });
  const browser = await launchBrowser();
  const agent = await connectAgent(daemon, {
    sessionId: ID,
    session: sessionInfo(ID, { name: "gated work" }),
  });
  const session = await openPage(browser, daemon, { signIn: true });
  const list = await openPage(browser, daemon, { signIn: true });
  try {
    agent.send("agent_start");
    agent.send(
      "message_end",
      assistantCalling("a1", [{ id: "c1", name: "bash", args: { command: "rm -rf build" } }]),
    );
    agent.send("tool_execution_start", {
      toolCallId: "c1",
      toolName: "bash",
      args: { command: "rm -rf build" },
    });
    await gotoHydrated(session, daemon, `/sessions/${ID}`);
    await gotoHydrated(list, daemon, "/");
    await session.page.waitForSelector("[data-conn='open']");
    await list.page.waitForSelector("[data-conn='open']");

    await t.step("the request shows live as a card; the tool card reads awaiting approval", async () => {
      assert.equal(await session.page.locator(".approval").count(), 0);
      agent.send("approval_request", {
        approvalId: "ap1",
        toolCallId: "c1",
        toolName: "bash",
        args: { command: "rm -rf build" },
      });
      const card = session.page.locator("[data-approval='ap1']");
      await card.waitFor();
      assert.equal(await card.getAttribute("data-state"), "pending");
      assert.equal(await card.locator("pre.command").innerText(), "rm -rf build");
      assert.match(await session.page.locator("[data-tool='bash'] .chip").innerText(), /awaiting approval/);
      // Every page's top bar counts it and links to the card; the list marks the session.
      await list.page.waitForSelector("[data-waiting='1']");
      assert.match(await list.page.locator(".waiting summary").innerText(), /1\s+waiting/);
      await list.page.click(".waiting summary");
      const link = list.page.locator("[data-approval-link='ap1']");
      assert.equal(await link.getAttribute("href"), `/sessions/${ID}#approval-ap1`);
      assert.match(await link.innerText(), /^bash\s+in gated work$/, "the tool and the session's title");
      await list.page.waitForSelector(`[data-session='${ID}'].needs-you [data-waiting-session='1']`);
      await screenshot(session.page, "approval-pending");
    });

    await t.step(
      "Approve reaches the plugin; the card says who, and then that it was delivered",
      async () => {
        await session.page.click("[data-approval='ap1'] button.approve");
        const decision = await agent.waitFrame((f) => f.type === "approval_decision", "the decision");
        assert.equal(decision.approvalId, "ap1");
        assert.equal(decision.decision, "approve");
        const card = session.page.locator("[data-approval='ap1']");
        await session.page.waitForSelector("[data-approval='ap1'][data-state='approved']");
        // The card names whoever the daemon says decided (the same name the plugin was sent).
        assert.equal(await card.locator(".decided-by").innerText(), decision.by);
        assert.match(await card.locator(".approval-outcome").innerText(), /^Approved by \S+ at /);
        assert.match(await card.locator(".delivery").innerText(), /not yet delivered/);
        // The other tab's badge and mark go away without a reload.
        await list.page.waitForSelector(".waiting", { state: "detached" });
        await list.page.waitForSelector(`[data-session='${ID}']:not(.needs-you)`);

        agent.send("approval_resolved", {
          approvalId: "ap1",
          decision: "approve",
          by: "admin",
          source: "web",
        });
        await session.page.waitForSelector("[data-approval='ap1'] .delivery.delivered");
        agent.send("tool_execution_end", {
          toolCallId: "c1",
          toolName: "bash",
          isError: false,
          resultPreview: "",
        });
        await session.page.waitForSelector("[data-tool='bash'] .chip.done");
      },
    );

    await t.step("keys: r rejects the only pending call; an edit shows its diff", async () => {
      agent.send(
        "message_end",
        assistantCalling("a2", [{
          id: "c2",
          name: "edit",
          args: { path: "src/m.ts", oldText: "let x = 1;", newText: "const x = 1;" },
        }]),
      );
      agent.send("approval_request", {
        approvalId: "ap2",
        toolCallId: "c2",
        toolName: "edit",
        args: { path: "src/m.ts", oldText: "let x = 1;", newText: "const x = 1;" },
      });
      const card = session.page.locator("[data-approval='ap2']");
      await card.waitFor();
      assert.equal(await card.locator(".diff .del").innerText(), "- let x = 1;");
      assert.equal(await card.locator(".diff .add").innerText(), "+ const x = 1;");
      await list.page.waitForSelector("[data-waiting='1']");
      // Typing a reason never answers; the key outside any field does.
      await card.locator("input.reason").fill("keep let");
      assert.equal(await card.getAttribute("data-state"), "pending");
      await session.page.locator("h1.session-name").click();
      await session.page.keyboard.press("r");
      const decision = await agent.waitFrame(
        (f) => f.type === "approval_decision" && f.approvalId === "ap2",
        "ap2",
      );
      assert.equal(decision.decision, "reject");
      assert.equal(decision.reason, "keep let", "the reason typed on the card goes with the key");
      await session.page.waitForSelector("[data-approval='ap2'][data-state='rejected']");
      await list.page.waitForSelector(".waiting", { state: "detached" });
    });

    await t.step("keys: a approves the focused card", async () => {
      agent.send("approval_request", {
        approvalId: "ap5",
        toolCallId: "c5",
        toolName: "bash",
        args: { command: "make test" },
      });
      const card = session.page.locator("[data-approval='ap5']");
      await card.waitFor();
      await card.focus();
      await session.page.keyboard.press("a");
      const decision = await agent.waitFrame(
        (f) => f.type === "approval_decision" && f.approvalId === "ap5",
        "ap5",
      );
      assert.equal(decision.decision, "approve");
      await session.page.waitForSelector("[data-approval='ap5'][data-state='approved']");
    });

    await t.step("an answer typed in pi's terminal shows on the card as the terminal's", async () => {
      agent.send("approval_request", {
        approvalId: "ap4",
        toolCallId: "c4",
        toolName: "bash",
        args: { command: "ls" },
      });
      await session.page.locator("[data-approval='ap4'][data-state='pending']").waitFor();
      agent.send("approval_resolved", {
        approvalId: "ap4",
        decision: "approve",
        by: "terminal",
        source: "terminal",
      });
      const card = session.page.locator("[data-approval='ap4']");
      await session.page.waitForSelector("[data-approval='ap4'][data-state='approved'] .delivery.delivered");
      assert.match(await card.locator(".approval-outcome").innerText(), /^Approved in the terminal at /);
      assert.equal(await card.locator(".source-terminal").count(), 1);
      await list.page.waitForSelector(".waiting", { state: "detached" });
    });

    await t.step("the ask-set control sends the new set to the plugin", async () => {
      await session.page.selectOption("select[name=ask]", "all");
      await session.page.click(".ask-form button[type=submit]");
      const policy = await agent.waitFrame((f) => f.type === "policy", "the policy frame");
      assert.equal(policy.ask, "all");
      await session.page.waitForSelector(".ask-form .note.ok");
      await session.page.selectOption("select[name=ask]", "custom");
      await session.page.fill("input[name=ask-custom]", "bash, write");
      await session.page.click(".ask-form button[type=submit]");
      const custom = await agent.waitFrame(
        (f) => f.type === "policy" && Array.isArray(f.ask),
        "the custom set",
      );
      assert.deepEqual(custom.ask, ["bash", "write"]);
      const row = await waitFor(async () => {
        const s = await (await daemon.api(`/api/sessions/${ID}`)).json();
        return Array.isArray(s.ask) && s.ask.length === 2 ? s : null;
      }, "the stored ask set");
      assert.deepEqual(row.ask, ["bash", "write"]);
    });

    await t.step("phone width: the card and its buttons fit 375 px", async () => {
      const phone = await openPage(browser, daemon, { signIn: true, viewport: { width: 375, height: 740 } });
      try {
        agent.send(
          "message_end",
          assistantCalling("a3", [{
            id: "c3",
            name: "write",
            args: { path: "notes/a-very-long-file-name-for-a-phone.md", content: "x".repeat(300) },
          }]),
        );
        agent.send("approval_request", {
          approvalId: "ap3",
          toolCallId: "c3",
          toolName: "write",
          args: { path: "notes/a-very-long-file-name-for-a-phone.md", content: "x".repeat(300) },
        });
        await gotoHydrated(phone, daemon, `/sessions/${ID}#approval-ap3`);
        const card = phone.page.locator("[data-approval='ap3']");
        await card.waitFor();
        // A write shows the file it writes and what goes in it.
        assert.equal(await card.locator(".path").innerText(), "notes/a-very-long-file-name-for-a-phone.md");
        assert.equal(await card.locator("pre.content").innerText(), "x".repeat(300));
        await card.scrollIntoViewIfNeeded();
        const width = await phone.page.evaluate(() => document.documentElement.scrollWidth);
        assert.ok(width <= 375, `page is ${width}px wide`);
        for (const b of ["button.approve", "button.reject"]) {
          const box = await card.locator(b).boundingBox();
          assert.ok(
            box && box.x >= 0 && box.x + box.width <= 375,
            `${b} is on screen: ${JSON.stringify(box)}`,
          );
        }
        await screenshot(phone.page, "approval-phone");
        await card.locator("button.approve").click();
        await agent.waitFrame((f) => f.type === "approval_decision" && f.approvalId === "ap3", "ap3");
        assert.deepEqual(phone.problems, []);
      } finally {
        await phone.close();
      }
    });

    assert.deepEqual(session.problems, []);
    assert.deepEqual(list.problems, []);
  } finally {
    await session.close();
    await list.close();
    await agent.close();
    await browser.close();
    await daemon.stop();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
