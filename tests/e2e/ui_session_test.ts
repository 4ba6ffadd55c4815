/**
 * The session page in real Chromium against the real daemon and a scripted plugin: the rebuilt conversation and
 * panels, live streaming, the composer reaching the plugin socket (steer, follow-up, abort), hostile content
 * rendered inert, the offline state, catching up after a daemon restart without duplicates or gaps, and
 * deleting the session once it is offline.
 */
import assert from "node:assert/strict";
import { freePort, startDaemon, waitFor } from "../../testing/daemon.ts";
import { type AgentClient, connectAgent, sessionInfo } from "../../testing/agent.ts";
import { gotoHydrated, launchBrowser, loadAllOlder, openPage, screenshot } from "../../testing/chromium.ts";

const ID = "work-1";

function message(role: string, id: string, text: string, extra: Record<string, unknown> = {}) {
  return { message: { role, id, text, thinking: null, toolCalls: [], toolCallId: null, ...extra } };
}

/** A finished run with Markdown, thinking, a bash call, todo calls and a subagent call. */
function seedConversation(a: AgentClient): number {
  a.send("agent_start");
  a.send("message_end", message("user", "u1", "Please tidy the repo"));
  a.send(
    "message_end",
    message("assistant", "a1", "I will **list** files first.", {
      thinking: "The user wants a tidy repo.",
      toolCalls: [
        { id: "c1", name: "bash", argsJson: JSON.stringify({ command: "ls -la" }) },
        { id: "c2", name: "todo", argsJson: JSON.stringify({ action: "add", text: "remove dead code" }) },
        { id: "c3", name: "todo", argsJson: JSON.stringify({ action: "add", text: "update docs" }) },
        { id: "c4", name: "todo", argsJson: JSON.stringify({ action: "toggle", id: 1 }) },
        { id: "c5", name: "subagent", argsJson: JSON.stringify({ agent: "scout", task: "find dead code" }) },
        { id: "c6", name: "mystery_tool", argsJson: JSON.stringify({ q: "x" }) },
      ],
    }),
  );
  const results: [string, string, string, boolean][] = [
    ["c1", "bash", "a.txt\nb.txt", false],
    ["c2", "todo", "Added todo #1: remove dead code", false],
    ["c3", "todo", "Added todo #2: update docs", false],
    ["c4", "todo", "Todo #1 completed", false],
    ["c5", "subagent", "scout found 3 unused files", false],
    ["c6", "mystery_tool", "it broke", true],
  ];
  for (const [id, name, text, isError] of results) {
    a.send("tool_execution_start", { toolCallId: id, toolName: name, args: {} });
    a.send("tool_execution_end", { toolCallId: id, toolName: name, isError, resultPreview: text });
    a.send("message_end", message("toolResult", `r-${id}`, text, { toolCallId: id }));
  }
  a.send("message_end", message("assistant", "a2", "Done: two todos, one finished."));
  a.send("agent_end", { usage: { inputTokens: 1200, outputTokens: 345, totalCost: 0.0123 } });
  return a.send("agent_settled");
}

Deno.test("UI: session page", async (t) => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-ui-" });
  const port = freePort();
  let daemon = await startDaemon({ dataDir, port });
  const browser = await launchBrowser();
  let agent = await connectAgent(daemon, {
    sessionId: ID,
    session: sessionInfo(ID, { name: "tidy the repo", cwd: "/home/dev/repo" }),
  });
  const ui = await openPage(browser, daemon, { signIn: true });
  const page = ui.page;
  // Headless Chromium shows no notifications; record them instead (permission granted, as after the prompt).
  await ui.context.addInitScript(() => {
    const notes: { title: string; tag?: string }[] = [];
    Object.assign(globalThis, { __notes: notes });
    class RecordedNotification {
      static permission = "granted";
      static requestPermission = () => Promise.resolve("granted");
      onclick: (() => void) | null = null;
      constructor(title: string, opts?: { tag?: string }) {
        notes.push({ title, tag: opts?.tag });
      }
    }
    Object.assign(globalThis, { Notification: RecordedNotification });
  });
  try {
    const seeded = seedConversation(agent);
    const lastSeq = async () =>
      ((await (await daemon.api("/api/sessions")).json()) as { id: string; lastSeq: number }[])
        .find((s) => s.id === ID)?.lastSeq ?? 0;
    await waitFor(async () => await lastSeq() >= seeded, "seeded conversation stored");

    await t.step("conversation, tool cards and panels are rebuilt from stored events", async () => {
      const sockets: string[] = [];
      const record = (ws: { url(): string }) => sockets.push(ws.url());
      page.on("websocket", record);
      await gotoHydrated(ui, daemon, `/sessions/${ID}`);
      await page.waitForSelector("[data-conn='open']");
      // The conversation, the top bar's waiting badge and the side panels share the page's one live connection.
      assert.equal(sockets.filter((u) => new URL(u).pathname === "/ws").length, 1, sockets.join(", "));
      page.off("websocket", record);
      assert.equal(await page.locator(".msg.user .text").first().innerText(), "Please tidy the repo");
      assert.equal(await page.locator(".msg.assistant .md strong").first().innerText(), "list");
      assert.equal(await page.locator(".thinking[open]").count(), 0, "thinking is folded");
      assert.match(await page.locator(".tool[data-tool='bash'] summary").innerText(), /ls -la/);
      assert.match(
        await page.locator(".tool[data-tool='mystery_tool']").getAttribute("class") ?? "",
        /tool-error/,
      );
      assert.match(await page.locator(".todos").innerText(), /1\/2/);
      assert.match(await page.locator(".todos li.done").innerText(), /remove dead code/);
      assert.match(await page.locator(".subagents").innerText(), /scout/);
      assert.match(await page.locator(".usage").innerText(), /\$0\.0123/);
      assert.match(await page.locator(".run-end").innerText(), /1\.2k in · 345 out/);
      await page.click(".tool[data-tool='bash'] summary");
      assert.match(await page.locator(".tool[data-tool='bash'] pre.result").innerText(), /b\.txt/);
    });

    await t.step("streaming deltas show in the current assistant message", async () => {
      agent.send("agent_start");
      await page.waitForSelector(".state-line [data-state='running']");
      agent.send("message_end", message("user", "u2", "and now?"));
      agent.send("message_start", { message: { role: "assistant", id: "a3" } });
      agent.send("message_update", { delta: "Streaming " });
      agent.send("message_update", { delta: "**works**" });
      await page.waitForSelector(".msg.streaming strong:has-text('works')");
      agent.send("message_end", message("assistant", "a3", "Streaming **works** fine."));
      await page.waitForSelector(".msg.streaming", { state: "detached" });
      await page.waitForSelector(".msg.assistant:has-text('Streaming works fine.')");
      await screenshot(page, "session-desktop");
    });

    await t.step("composer: Enter steers, Alt+Enter queues a follow-up, Abort aborts", async () => {
      await page.waitForSelector("button.followup");
      await page.fill("#prompt", "go left");
      await page.press("#prompt", "Enter");
      const steer = await agent.waitFrame(
        (f) => f.type === "prompt" && f.message === "go left",
        "steer prompt",
      );
      assert.equal(steer.deliverAs, "steer");
      await page.waitForSelector(".note.ok");
      assert.equal(await page.inputValue("#prompt"), "", "sent text is cleared");
      await page.fill("#prompt", "then right");
      await page.press("#prompt", "Alt+Enter");
      const follow = await agent.waitFrame(
        (f) => f.type === "prompt" && f.message === "then right",
        "follow-up",
      );
      assert.equal(follow.deliverAs, "followUp");
      await page.click("button.abort");
      await agent.waitFrame((f) => f.type === "abort", "abort");
      agent.send("agent_end", { usage: {} });
      await page.waitForSelector(".state-line [data-state='settled']");
      assert.equal(await page.locator("button.followup").count(), 0, "follow-up only while running");
    });

    await t.step("hostile text, arguments and results render inert", async () => {
      agent.send(
        "message_end",
        message(
          "assistant",
          "x1",
          `<img src=x onerror="window.__xss=1"> [click](javascript:window.__xss=2)`,
          {
            thinking: `<iframe src="javascript:window.__xss=3"></iframe>`,
            toolCalls: [{
              id: "x2",
              name: "<b>bash</b>",
              argsJson: `{"command":"<script>window.__xss=4</script>"}`,
            }],
          },
        ),
      );
      agent.send("tool_execution_end", {
        toolCallId: "x2",
        toolName: "<b>bash</b>",
        isError: false,
        resultPreview: `<svg onload="window.__xss=5">`,
      });
      agent.send("message_end", message("user", "x3", `<script>window.__xss=6</script>`));
      await page.waitForSelector(".msg.user:has-text('window.__xss=6')");
      await gotoHydrated(ui, daemon, `/sessions/${ID}`); // the server render as well
      await page.waitForSelector(".msg.user:has-text('window.__xss=6')");
      await page.click(".tool[data-tool='<b>bash</b>'] summary");
      assert.equal(await page.evaluate(() => (globalThis as { __xss?: number }).__xss ?? null), null);
      assert.equal(
        await page.locator(".conversation img, .conversation svg, .conversation iframe").count(),
        0,
      );
      assert.equal(await page.locator("a[href^='javascript']").count(), 0);
      assert.deepEqual(ui.problems, []);
    });

    await t.step("opt-in notification when the watched session settles", async () => {
      await page.click("button.watch");
      await page.waitForSelector("button.watch[aria-pressed='true']");
      agent.send("agent_start");
      agent.send("agent_end", { usage: {} });
      agent.send("agent_settled");
      await page.waitForFunction(() => (globalThis as unknown as { __notes: unknown[] }).__notes.length > 0);
      const notes = await page.evaluate(() =>
        (globalThis as unknown as { __notes: { title: string }[] }).__notes
      );
      assert.deepEqual(notes.map((n) => n.title), ["tidy the repo is done"]);
    });

    await t.step("long session: latest page first, older pages on scroll, no gaps", async () => {
      const long = await connectAgent(daemon, { sessionId: "long-1", session: sessionInfo("long-1") });
      let last = 0;
      for (let i = 1; i <= 1000; i++) {
        last = long.send(
          "message_end",
          message(i % 2 ? "user" : "assistant", `l${i}`, `message number ${i}`),
        );
      }
      await waitFor(
        async () =>
          ((await (await daemon.api("/api/sessions")).json()) as { id: string; lastSeq: number }[])
            .find((s) => s.id === "long-1")?.lastSeq === last,
        "long session stored",
      );
      const longUi = await openPage(browser, daemon, { signIn: true });
      try {
        await gotoHydrated(longUi, daemon, "/sessions/long-1");
        const p = longUi.page;
        assert.equal(
          await p.locator(".conversation [data-seq]").count(),
          300,
          "only the latest page at first",
        );
        assert.match(await p.locator(".conversation [data-seq]").last().innerText(), /message number 1000/);
        const firstShown = await p.locator(".conversation [data-seq]").first().getAttribute("data-seq");
        await p.evaluate(() => scrollTo(0, 0));
        await waitFor(async () => await p.locator(".conversation [data-seq]").count() === 600, "second page");
        // The message that was on top stays in view while older ones are added above it.
        const box = await p.locator(`.conversation [data-seq='${firstShown}']`).boundingBox();
        assert.ok(box && box.y > -50 && box.y < 860, `anchor in view at ${box?.y}`);
        const seqs = await loadAllOlder(p);
        assert.equal(seqs.length, 1000);
        assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b));
        assert.equal(new Set(seqs).size, 1000);
        await p.waitForSelector("text=Beginning of the session");
        // Scrolled up to read: a new message does not yank the view; a button offers the jump instead.
        long.send("message_end", message("assistant", "l1001", "message number 1001"));
        await p.click("button.jump-latest");
        await p.waitForSelector("button.jump-latest", { state: "detached" });
        await waitFor(
          async () =>
            await p.locator(".msg:has-text('message number 1001')").isVisible() &&
            await p.evaluate(() => scrollY + innerHeight >= document.documentElement.scrollHeight - 200),
          "scrolled to the newest message",
        );
        assert.match(await p.title(), /^✓ session long-1 · lvmh$/);
        assert.deepEqual(longUi.problems, []);
      } finally {
        await longUi.close();
        await long.close();
      }
    });

    await t.step(
      "offline: composer disabled with the reason, also when only the REST 409 tells",
      async () => {
        // A second tab that never hears of it: the session list frames (whole and deltas) are dropped on the way.
        const stale = await openPage(browser, daemon, { signIn: true });
        try {
          await stale.page.routeWebSocket(/\/ws/, (ws) => {
            const server = ws.connectToServer();
            server.onMessage((m) => /"type":"session_(list|update)"/.test(String(m)) || ws.send(m));
            ws.onMessage((m) => server.send(m));
          });
          await gotoHydrated(stale, daemon, `/sessions/${ID}`);
          await stale.page.waitForSelector("[data-conn='open']");

          agent.send("bye", { reason: "shutdown" });
          await agent.close();
          await page.waitForSelector(".offline-reason");
          assert.ok(await page.locator("#prompt").isDisabled());
          assert.match(await page.locator(".state-line").innerText(), /offline/);

          assert.equal(
            await stale.page.locator(".offline-reason").count(),
            0,
            "the stale tab thinks it is online",
          );
          await stale.page.fill("#prompt", "are you still there?");
          await stale.page.press("#prompt", "Enter");
          await stale.page.waitForSelector(".offline-reason");
          assert.match(await stale.page.locator(".composer .note.error").innerText(), /offline/);
          assert.equal(await stale.page.inputValue("#prompt"), "are you still there?", "the text is kept");
        } finally {
          await stale.close();
        }
      },
    );

    await t.step("daemon restart: reconnects, catches up, no duplicates", async () => {
      const before = await page.locator("[data-seq]").count();
      await daemon.kill("SIGTERM");
      await page.waitForSelector("[data-conn='retrying']");
      await screenshot(page, "session-reconnecting");
      daemon = await startDaemon({ dataDir, port });
      agent = await connectAgent(daemon, {
        sessionId: ID,
        session: sessionInfo(ID, { name: "tidy the repo" }),
      });
      // Sent while the browser is still waiting to reconnect: must arrive by catch-up.
      agent.send("message_end", message("user", "n1", "missed while away"));
      await page.waitForSelector("[data-conn='open']", { timeout: 20_000 });
      agent.send("message_end", message("assistant", "n2", "live after reconnect"));
      await page.waitForSelector(".msg.assistant:has-text('live after reconnect')");
      await page.waitForSelector(".msg.user:has-text('missed while away')");
      const seqs = await page.locator("[data-seq]").evaluateAll((els) =>
        els.map((e) => e.getAttribute("data-seq"))
      );
      assert.equal(new Set(seqs).size, seqs.length, "no duplicated items");
      assert.equal(seqs.length, before + 2);
      assert.ok(!await page.locator("#prompt").isDisabled(), "online again");
      assert.deepEqual(ui.problems.filter((p) => !/WebSocket|ERR_CONNECTION_REFUSED/.test(p)), []);
    });

    await t.step("phone layout: 375 px wide, no horizontal scrolling", async () => {
      const phone = await openPage(browser, daemon, {
        signIn: true,
        viewport: { width: 375, height: 740 },
        colorScheme: "dark",
      });
      try {
        await gotoHydrated(phone, daemon, `/sessions/${ID}`);
        const width = await phone.page.evaluate(() => document.documentElement.scrollWidth);
        const wide = await phone.page.evaluate(() =>
          [...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > 376)
            .slice(0, 5).map((e) => `${e.tagName}.${e.className}`)
        );
        assert.ok(width <= 375, `page is ${width} px wide: ${wide.join(", ")}`);
        await screenshot(phone.page, "session-mobile-dark");
        // The side panels sit above the conversation on a phone.
        await phone.page.evaluate(() => scrollTo(0, 0));
        await screenshot(phone.page, "session-mobile-top-dark");
      } finally {
        await phone.close();
      }
    });

    await t.step("delete: only offline, from the page; another tab says it is gone", async () => {
      assert.equal(await page.locator(".delete-session").count(), 0, "no delete button while online");
      agent.send("bye", { reason: "shutdown" });
      await agent.close();
      const other = await openPage(browser, daemon, { signIn: true });
      try {
        await gotoHydrated(other, daemon, `/sessions/${ID}`);
        // The confirmation names the session; dismissing it deletes nothing.
        page.removeAllListeners("dialog");
        const asked: string[] = [];
        page.once("dialog", (dialog) => {
          asked.push(dialog.message());
          void dialog.dismiss();
        });
        await page.locator(".delete-session").click();
        await waitFor(() => asked.length === 1, "the confirmation");
        assert.match(asked[0], /Delete "tidy the repo"/);
        assert.equal((await daemon.api(`/api/sessions/${ID}`)).status, 200);
        page.once("dialog", (dialog) => void dialog.accept());
        await page.locator(".delete-session").click();
        await page.waitForURL(`${daemon.url}/`);
        await page.waitForSelector("[data-conn='open']");
        assert.equal(await page.locator(`a[href="/sessions/${ID}"]`).count(), 0, "not in the list");
        await other.page.waitForSelector(".notice.deleted");
        assert.equal(await other.page.locator(".delete-session").count(), 0);
        assert.equal((await daemon.api(`/api/sessions/${ID}`)).status, 404);
      } finally {
        await other.close();
      }
    });
  } finally {
    await ui.close();
    await agent.close().catch(() => {});
    await browser.close();
    await daemon.stop();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
