/**
 * Reading sessions at a glance, in real Chromium against the real daemon and scripted plugins: titles (pi's
 * name, the first prompt, the cwd's folder) on the list and the page; each row says live what its session
 * does (running a tool, streaming a line, idle with the last line, cost); a highlighted code block, stored
 * and streamed; an edit as a unified diff with line numbers; and the "since you last looked" divider.
 */
import assert from "node:assert/strict";
import { freePort, startDaemon } from "../../testing/daemon.ts";
import { connectAgent, sessionInfo, userEnd } from "../../testing/agent.ts";
import { gotoHydrated, launchBrowser, openPage, screenshot } from "../../testing/chromium.ts";

function assistant(id: string, text: string, calls: { id: string; name: string; args: unknown }[] = []) {
  return {
    message: {
      role: "assistant",
      id,
      text,
      thinking: null,
      toolCalls: calls.map((c) => ({ id: c.id, name: c.name, argsJson: JSON.stringify(c.args) })),
      toolCallId: null,
    },
  };
}

Deno.test("UI: titles, live rows, highlighted code, edit diffs, since you last looked", async (t) => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-ui-" });
  const daemon = await startDaemon({ dataDir, port: freePort() });
  const browser = await launchBrowser();
  const folder = await connectAgent(daemon, {
    sessionId: "g-folder",
    session: sessionInfo("g-folder", { name: null, cwd: "/home/dev/alpha-repo" }),
  });
  const named = await connectAgent(daemon, {
    sessionId: "g-named",
    session: sessionInfo("g-named", { name: "release notes" }),
  });
  const ui = await openPage(browser, daemon, { signIn: true });
  const row = (id: string) => ui.page.locator(`[data-session='${id}']`);
  try {
    await t.step("titles: pi's name, else the cwd's folder, then the first prompt, live", async () => {
      await gotoHydrated(ui, daemon, "/");
      await ui.page.waitForSelector("[data-conn='open']");
      assert.equal(await row("g-named").locator(".name").innerText(), "release notes");
      assert.equal(await row("g-folder").locator(".name").innerText(), "alpha-repo");
      folder.send(
        "message_end",
        userEnd("u1", "Fix the flaky login test in the auth module please\nand more"),
      );
      await ui.page.waitForSelector("[data-session='g-folder'] .name:text('Fix the flaky login test')");
      assert.equal(
        await row("g-folder").locator(".name").innerText(),
        "Fix the flaky login test in the auth module please",
      );
      // The server renders the same title.
      const html = await (await daemon.api("/sessions/g-folder")).text();
      assert.match(html, /<span class="title"[^>]*>Fix the flaky login test in the auth module please</);
    });

    await t.step(
      "rows: running a tool, a streamed line, then idle with the last line and the cost",
      async () => {
        folder.send("agent_start");
        await ui.page.waitForSelector("[data-session='g-folder'][data-group='running']");
        assert.equal(
          await ui.page.locator(".session-row").first().getAttribute("data-session"),
          "g-folder",
          "running sessions come before idle ones",
        );
        assert.equal(await ui.page.locator("[data-group-head='running']").count(), 1);
        folder.send("tool_execution_start", {
          toolCallId: "t1",
          toolName: "bash",
          args: { command: "npm test" },
        });
        await ui.page.waitForSelector("[data-session='g-folder'] .activity:text('running: bash npm test')");
        folder.send("tool_execution_end", {
          toolCallId: "t1",
          toolName: "bash",
          isError: false,
          resultPreview: "ok",
        });
        folder.send("message_update", { delta: "Looking at the tests\nAll green so" });
        folder.send("message_update", { delta: " far" });
        await ui.page.waitForSelector(
          "[data-session='g-folder'] .activity:text('running: All green so far')",
        );
        folder.send("message_end", assistant("a1", "Done.\nAll tests pass now."));
        folder.send("agent_end", { usage: { totalCost: 0.0123 } });
        await ui.page.waitForSelector(
          "[data-session='g-folder'] .activity:text('idle: All tests pass now.')",
        );
        assert.equal(await row("g-folder").locator(".cost").innerText(), "$0.0123");
        await screenshot(ui.page, "sessions-glance");
        // The server's first render says the same.
        await gotoHydrated(ui, daemon, "/");
        assert.equal(await row("g-folder").locator(".activity").innerText(), "idle: All tests pass now.");
        assert.equal(await row("g-folder").locator(".cost").innerText(), "$0.0123");
      },
    );

    await t.step("a highlighted code block, from the store and streamed", async () => {
      named.send("message_end", assistant("b1", "Here:\n\n```ts\nconst answer: number = 42;\n```\n"));
      await gotoHydrated(ui, daemon, "/sessions/g-named");
      const code = ui.page.locator("article.msg.assistant .md pre.code code");
      assert.equal(await code.getAttribute("class"), "language-ts");
      assert.equal(await code.locator(".hljs-keyword").first().innerText(), "const");
      assert.equal(await code.locator(".hljs-number").innerText(), "42");
      await ui.page.waitForSelector("[data-conn='open']");
      named.send("agent_start");
      named.send("message_update", { delta: "```python\ndef f():\n    return None\n```" });
      await ui.page.waitForSelector(".msg.streaming pre.code .hljs-keyword:text('def')");
      // Colour comes from the stylesheet's classes: no inline style, nothing the CSP refused.
      const color = await ui.page.locator(".msg.streaming .hljs-keyword").first().evaluate((e) =>
        getComputedStyle(e).color
      );
      assert.notEqual(
        color,
        await ui.page.locator(".msg.streaming").evaluate((e) => getComputedStyle(e).color),
      );
      named.send("message_end", assistant("b2", "fine"));
      named.send("agent_end", { usage: {} });
    });

    await t.step("an edit as a unified diff with line numbers", async () => {
      named.send("agent_start");
      named.send(
        "message_end",
        assistant("b3", "", [{
          id: "e1",
          name: "edit",
          args: { path: "src/auth.ts", oldText: "let x = 1;\nkeep();", newText: "const x = 1;\nkeep();" },
        }]),
      );
      named.send("tool_execution_start", {
        toolCallId: "e1",
        toolName: "edit",
        args: { path: "src/auth.ts", oldText: "let x = 1;\nkeep();", newText: "const x = 1;\nkeep();" },
      });
      named.send("tool_execution_end", {
        toolCallId: "e1",
        toolName: "edit",
        isError: false,
        resultPreview: "Edited src/auth.ts",
        details: { firstChangedLine: 10 },
      });
      const diff = ui.page.locator(".tool[data-tool='edit'] .diff.unified");
      await diff.waitFor();
      assert.equal(await ui.page.locator(".tool[data-tool='edit'] .path").innerText(), "src/auth.ts");
      await ui.page.waitForSelector(".tool[data-tool='edit'] .hunk:text('@@ -10,2 +10,2 @@')");
      const numbers = (cls: string) => diff.locator(`.${cls} .ln`).allInnerTexts();
      assert.deepEqual(await numbers("del"), ["10", ""], "a removed line has only its old number");
      assert.deepEqual(await numbers("add"), ["", "10"], "an added line has only its new number");
      assert.deepEqual(await numbers("same"), ["11", "11"]);
      assert.match(await diff.locator(".del").innerText(), /-\s+let x = 1;$/);
      assert.match(await diff.locator(".add").innerText(), /\+\s+const x = 1;$/);
      named.send("agent_end", { usage: { totalCost: 0.5 } });
      await screenshot(ui.page, "edit-diff");
    });

    await t.step("coming back: a divider where this browser stopped, and what happened since", async () => {
      await ui.page.waitForSelector(".tool[data-tool='edit'] .chip.done");
      // Leave the page: it remembered the last seq it showed.
      await gotoHydrated(ui, daemon, "/");
      named.send("agent_start");
      named.send(
        "message_end",
        assistant("b4", "Writing the notes", [{
          id: "w1",
          name: "write",
          args: { path: "NOTES.md", content: "# Notes\n" },
        }, { id: "r1", name: "read", args: { path: "src/auth.ts", offset: 5, limit: 10 } }]),
      );
      named.send("tool_execution_start", {
        toolCallId: "w1",
        toolName: "write",
        args: { path: "NOTES.md", content: "# Notes\n" },
      });
      named.send("tool_execution_end", {
        toolCallId: "w1",
        toolName: "write",
        isError: false,
        resultPreview: "",
      });
      named.send("tool_execution_start", {
        toolCallId: "r1",
        toolName: "read",
        args: { path: "src/auth.ts", offset: 5, limit: 10 },
      });
      named.send("tool_execution_end", {
        toolCallId: "r1",
        toolName: "read",
        isError: false,
        resultPreview: "const x = 1;",
      });
      named.send("agent_end", { usage: { totalCost: 0.25 } });
      await ui.page.waitForSelector("[data-session='g-named'] .activity:text('idle: Writing the notes')");
      await gotoHydrated(ui, daemon, "/sessions/g-named");
      const card = ui.page.locator("[data-since-card]");
      await card.waitFor();
      assert.equal(await card.locator("[data-since-runs]").innerText(), "1 run");
      assert.equal(await card.locator("[data-since-tools]").innerText(), "2 tool calls");
      assert.equal(await card.locator("[data-since-files]").innerText(), "1 file touched: NOTES.md");
      assert.equal(await card.locator("[data-since-cost]").innerText(), "$0.2500");
      // The divider sits right before the first message after the one last shown.
      const before = await ui.page.locator("[data-since-divider]").evaluate((d) => {
        let e = d.previousElementSibling;
        while (e && e.tagName !== "ARTICLE") e = e.previousElementSibling;
        return e?.querySelector(".tool")?.getAttribute("data-tool") ?? null;
      });
      assert.equal(before, "edit", "the last message shown before leaving is above the divider");
      assert.match(await ui.page.locator("[data-since-divider] + article").innerText(), /Writing the notes/);
      // write shows the file with its path, read its path and lines.
      assert.equal(await ui.page.locator(".tool[data-tool='write'] .path").textContent(), "NOTES.md");
      assert.match(
        await ui.page.locator(".tool[data-tool='read'] .path").textContent() ?? "",
        /src\/auth\.ts · lines 5–14/,
      );
      await screenshot(ui.page, "since-divider");
      // Seen now: the next visit has no divider.
      await gotoHydrated(ui, daemon, "/sessions/g-named");
      await ui.page.waitForSelector("[data-conn='open']");
      assert.equal(await ui.page.locator("[data-since-divider]").count(), 0);
      assert.deepEqual(ui.problems, []);
    });
  } finally {
    await ui.close();
    await folder.close();
    await named.close();
    await browser.close();
    await daemon.stop();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
