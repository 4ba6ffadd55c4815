/**
 * Search in real Chromium against the real daemon and a scripted plugin: the search page's hits, grouped by
 * session, with matches as `<mark>` text (a message holding markup stays text); typing searches again; the
 * sessions list's filter also finds what was said; a hit opens its session at that event, highlighted and on
 * screen, even far back in a long history.
 */
import assert from "node:assert/strict";
import { freePort, startDaemon, waitFor } from "../../testing/daemon.ts";
import { connectAgent, sessionInfo, userEnd } from "../../testing/agent.ts";
import { gotoHydrated, launchBrowser, openPage, screenshot } from "../../testing/chromium.ts";

function assistant(id: string, text: string) {
  return { message: { role: "assistant", id, text, thinking: null, toolCalls: [], toolCallId: null } };
}

Deno.test("UI: search page, list filter over content, jump to a moment", async (t) => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-ui-search-" });
  const daemon = await startDaemon({ dataDir, port: freePort() });
  const browser = await launchBrowser();
  const agent = await connectAgent(daemon, {
    sessionId: "find-long",
    session: sessionInfo("find-long", { name: "long night" }),
  });
  const other = await connectAgent(daemon, {
    sessionId: "find-other",
    session: sessionInfo("find-other", { name: "other work" }),
  });
  const ui = await openPage(browser, daemon, { signIn: true });
  try {
    // A hit far back: 400 more messages come after it, more than the page's first history page.
    const runStart = agent.send("agent_start");
    const hostile = agent.send(
      "message_end",
      userEnd("u1", 'deploy the zebrafish build <img src=x onerror="window.pwned=1"> and «quote»'),
    );
    for (let i = 0; i < 400; i++) agent.send("message_end", assistant(`a${i}`, `step ${i} of the plan`));
    const runEnd = agent.send("agent_end", {
      usage: { inputTokens: 5000, outputTokens: 700, totalCost: 0.05 },
    });
    const last = other.send("message_end", assistant("o1", "zebrafish tests pass now"));
    await waitFor(async () => {
      const res = await daemon.api("/api/search?q=zebrafish");
      return (await res.json()).hits.length === 2 || undefined;
    }, "both hits indexed");
    await waitFor(async () => {
      const res = await daemon.api(`/api/sessions/find-long/events?after=${runEnd - 1}&limit=10`);
      return (await res.json()).length === 1 || undefined;
    }, "every event stored");
    assert.ok(last > 0);

    await t.step("the search page renders hits grouped by session, matches marked as text", async () => {
      await gotoHydrated(ui, daemon, "/search?q=zebrafish");
      const groups = ui.page.locator("[data-search-session]");
      assert.equal(await groups.count(), 2);
      const long = ui.page.locator("[data-search-session='find-long']");
      assert.equal(await long.locator("h3 a").innerText(), "long night");
      assert.deepEqual(await long.locator("mark").allInnerTexts(), ["zebrafish"]);
      // The message's markup is text: no element came of it, no script ran.
      assert.equal(await ui.page.locator(".search-results img").count(), 0);
      assert.match(await long.locator(".snippet").innerText(), /<img src=x onerror=/);
      assert.match(await long.locator(".snippet").innerText(), /‹quote›/);
      assert.equal(await ui.page.evaluate(() => (window as unknown as { pwned?: number }).pwned), undefined);
      await screenshot(ui.page, "search-page");
    });

    await t.step("typing searches again: phrases, exclusions", async () => {
      await ui.page.fill("#search-q", '"tests pass" -deploy');
      await ui.page.waitForSelector("[data-search-session='find-other'] mark");
      await waitFor(
        async () => await ui.page.locator("[data-search-session]").count() === 1 || undefined,
        "one group",
      );
      assert.deepEqual(await ui.page.locator("mark").allInnerTexts(), ["tests pass"]);
      assert.match(ui.page.url(), /q=%22tests\+pass%22\+-deploy|q=%22tests%20pass%22%20-deploy/);
    });

    await t.step("the sessions list's filter also finds what was said", async () => {
      await gotoHydrated(ui, daemon, "/");
      await ui.page.fill("#filter", "zebrafish");
      await ui.page.waitForSelector("[data-content-search] [data-search-session='find-long'] mark");
      assert.equal(await ui.page.locator("[data-content-search] [data-search-session]").count(), 2);
    });

    await t.step("a hit opens its session at that event, highlighted and on screen", async () => {
      await gotoHydrated(ui, daemon, "/search?q=zebrafish+build");
      await Promise.all([
        ui.page.waitForURL(`**/sessions/find-long?at=${hostile}`),
        ui.page.click(`[data-search-session='find-long'] a[data-hit-seq='${hostile}']`),
      ]);
      await ui.page.waitForSelector("html[data-hydrated='1']");
      const moment = ui.page.locator(`[data-moment='${hostile}']`);
      await moment.waitFor({ timeout: 10_000 });
      assert.equal(await moment.getAttribute("data-seq"), String(hostile));
      assert.match(await moment.getAttribute("class") ?? "", /at-moment/);
      assert.match(await moment.innerText(), /zebrafish build <img src=x/);
      // On screen, not the newest message at the bottom.
      await waitFor(
        async () =>
          await moment.evaluate((el) => {
            const r = el.getBoundingClientRect();
            return r.bottom > 0 && r.top < innerHeight;
          }) || undefined,
        "the moment in the viewport",
      );
      await screenshot(ui.page, "search-moment");
    });
    await t.step("the Runs view lists the run and opens the conversation at its start", async () => {
      await ui.page.click("[data-view='runs']");
      await ui.page.waitForSelector("[data-runs-loaded]");
      const rows = ui.page.locator("tr[data-run]");
      assert.equal(await rows.count(), 1);
      assert.equal(await rows.first().getAttribute("data-run"), String(runStart));
      assert.match(await rows.first().innerText(), /deploy the zebrafish build/);
      assert.match(await rows.first().innerText(), /done/);
      await Promise.all([
        ui.page.waitForURL(`**/sessions/find-long?at=${runStart}`),
        ui.page.click(`tr[data-run='${runStart}'] td.prompt a`),
      ]);
      await ui.page.waitForSelector("html[data-hydrated='1']");
      await ui.page.locator(".at-moment").waitFor({ timeout: 10_000 });
    });

    await t.step("the HTML export renders in Chromium with no script", async () => {
      const href = await ui.page.locator("[data-export] a", { hasText: "HTML" }).getAttribute("href");
      assert.equal(href, "/api/sessions/find-long/export?format=html");
      const html = await (await daemon.api(href!)).text();
      const view = await ui.context.newPage();
      const errors: string[] = [];
      view.on("pageerror", (e) => errors.push(e.message));
      await view.setContent(html);
      assert.equal(await view.locator("script").count(), 0);
      assert.equal(await view.locator("img").count(), 0);
      assert.match(await view.locator(".msg.user").first().innerText(), /zebrafish build <img src=x/);
      assert.equal(await view.evaluate(() => (window as unknown as { pwned?: number }).pwned), undefined);
      assert.deepEqual(errors, []);
      await view.close();
    });
    await t.step("?at= shows the todo list and usage as they were at that event", async () => {
      const todo = await connectAgent(daemon, { sessionId: "find-todo" });
      const call = (id: string, args: Record<string, unknown>, result: string) => {
        todo.send("tool_execution_start", { toolCallId: id, toolName: "todo", args });
        return todo.send("tool_execution_end", {
          toolCallId: id,
          toolName: "todo",
          isError: false,
          resultPreview: result,
        });
      };
      todo.send("agent_start");
      call("t1", { action: "add", text: "write tests" }, "Added todo #1: write tests");
      const before = call("t2", { action: "add", text: "ship it" }, "Added todo #2: ship it");
      todo.send("agent_end", { usage: { inputTokens: 1000, outputTokens: 10, totalCost: 0.01 } });
      todo.send("agent_start");
      call("t3", { action: "toggle", id: 1 }, "Todo #1 completed");
      const last = todo.send("agent_end", {
        usage: { inputTokens: 2000, outputTokens: 20, totalCost: 0.02 },
      });
      await waitFor(async () => {
        const res = await daemon.api(`/api/sessions/find-todo/events?after=${last - 1}&limit=1`);
        return (await res.json()).length === 1 || undefined;
      }, "todo events stored");
      await gotoHydrated(ui, daemon, `/sessions/find-todo?at=${before}`);
      await ui.page.waitForSelector(`[data-as-at='${before}']`);
      const todos = ui.page.locator(".panel.todos");
      assert.equal(await todos.locator(".count").innerText(), "0/2");
      assert.equal(await todos.locator("li.done").count(), 0);
      // No run had ended at that event: no tokens yet.
      assert.match(await ui.page.locator(".panel.usage").innerText(), /^USAGE\n0\ninput/i);
      await ui.page.click(`[data-as-at='${before}'] button`);
      await waitFor(
        async () => await todos.locator(".count").innerText() === "1/2" || undefined,
        "the list now",
      );
      assert.equal(await todos.locator("li.done").count(), 1);
      assert.doesNotMatch(await ui.page.locator(".panel.usage").innerText(), /^USAGE\n0\ninput/i);
      await todo.close();
    });
    assert.deepEqual(ui.problems, []);
  } finally {
    await ui.close();
    await browser.close();
    await agent.close();
    await other.close();
    await daemon.stop();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
