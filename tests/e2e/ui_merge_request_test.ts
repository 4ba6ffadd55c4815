/**
 * The session page's Merge request panel in real Chromium on a phone-sized screen, against the in-process
 * daemon with the real engine, the worker-shaped stub image and the loopback GitLab (API and git smart HTTP).
 * A scripted plugin is the spawned session (its working copy a volume this test fills, its record written
 * through app.workspaces, as merge_request_test.ts does). The panel opens the merge request (!1), the list
 * shows it, a review comment is picked and sent, and the plugin receives one prompt quoting it. Its write
 * cards show each write's own change.
 */
import assert from "node:assert/strict";
import { type Daemon, waitFor } from "../../testing/daemon.ts";
import { connectAgent, sessionInfo } from "../../testing/agent.ts";
import { ARTIFACTS, gotoHydrated, launchBrowser, openPage, screenshot } from "../../testing/chromium.ts";
import { agentDoes } from "../../testing/work_copy.ts";
import { dockerTest } from "../../testing/docker.ts";
import { startShipEnv } from "../../testing/ship_env.ts";

function assistant(id: string, calls: { id: string; name: string; args: unknown }[]) {
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

dockerTest(
  "UI: the Merge request panel on a phone: open one, see it listed, send a review comment",
  async (t) => {
    const env = await startShipEnv("mr-ui");
    const { engine, image, project, token, gitHttp, gl, sessionId, branch, volume, daemon } = env;
    const app = daemon.daemon.app;
    // The page helpers read only the URL and the token; this daemon is no process to kill.
    const web: Daemon = { ...daemon, kill: () => Promise.reject(new Error("an in-process daemon")) };
    const browser = await launchBrowser();
    const agent = await connectAgent(daemon, {
      sessionId,
      session: sessionInfo(sessionId, {
        name: "Add the notes file",
        agent: true,
        repo: project,
        cwd: "/workspace",
      }),
    });
    try {
      await env.prepare({ "README.md": "hello\n" });
      await agentDoes(engine, image, volume, "printf 'one\\ntwo\\n' > NOTES.md");
      await app.gitlab.connect(token);
      // The session wrote NOTES.md twice: the second card shows only its own change.
      agent.send("agent_start");
      agent.send(
        "message_end",
        assistant("a1", [
          { id: "w1", name: "write", args: { path: "NOTES.md", content: "one\n" } },
          { id: "w2", name: "write", args: { path: "NOTES.md", content: "one\ntwo\n" } },
        ]),
      );
      for (const [call, content] of [["w1", "one\n"], ["w2", "one\ntwo\n"]]) {
        const args = { path: "NOTES.md", content };
        agent.send("tool_execution_start", { toolCallId: call, toolName: "write", args });
        agent.send("tool_execution_end", {
          toolCallId: call,
          toolName: "write",
          isError: false,
          resultPreview: "",
        });
      }
      agent.send("agent_end", { usage: {} });
      agent.send("agent_settled");

      const ui = await openPage(browser, web, { signIn: true, viewport: { width: 390, height: 844 } });
      const page = ui.page;

      await t.step("write cards: the first as an added file, the second as its own change", async () => {
        await gotoHydrated(ui, web, `/sessions/${sessionId}`);
        const cards = page.locator(".tool[data-tool='write']");
        await cards.nth(1).locator(".diff-line.add").waitFor();
        assert.equal(await cards.nth(0).locator(".tool-body").getAttribute("data-write"), "whole");
        assert.equal(await cards.nth(1).locator(".tool-body").getAttribute("data-write"), "diff");
        assert.equal(await cards.nth(1).locator(".diff-line.add").count(), 1);
        assert.equal(await cards.nth(1).locator(".diff-line.del").count(), 0);
        assert.match(await cards.nth(1).locator(".diff-line.add").innerText(), /\+\s*two$/);
      });

      await t.step("the form opens !1 against the base branch; the panel and the list show it", async () => {
        const panel = page.locator(".mr-panel");
        await page.waitForSelector(".mr-panel[data-mr='none']");
        await panel.locator("[data-open-mr-form]").click();
        // The target starts as the session's base branch, read from what the session changed.
        await waitFor(
          async () => await panel.locator("input[name='target']").inputValue() === "main",
          "target main",
        );
        await panel.locator("[data-mr-changes]").waitFor();
        assert.equal(await panel.locator("input[name='title']").inputValue(), "Add the notes file");
        await panel.locator("textarea[name='description']").fill("Made from the phone");
        await panel.locator("button[type='submit']").click();
        await page.waitForSelector(".mr-panel[data-mr='1']", { timeout: 60_000 });
        assert.equal(await panel.locator(".mr-link").innerText(), "!1");
        assert.equal(
          await panel.locator(".mr-link").getAttribute("href"),
          `${gl.url}/${project}/-/merge_requests/1`,
        );
        assert.equal(await panel.locator("[data-mr-state]").innerText(), "opened");
        assert.equal(gl.mergeRequests.length, 1);
        assert.equal(gl.mergeRequests[0].title, "Add the notes file");
        assert.equal(gl.mergeRequests[0].description, "Made from the phone");
        assert.equal(gl.mergeRequests[0].sourceBranch, branch);
        assert.equal(gl.mergeRequests[0].targetBranch, "main");

        const list = await ui.context.newPage();
        await list.goto(`${daemon.url}/`);
        await list.waitForSelector(`[data-session='${sessionId}'] [data-merge-request='1']`);
        assert.match(
          await list.locator(`[data-session='${sessionId}'] [data-merge-request='1']`).innerText(),
          /^!1\b/,
        );
        await list.close();
      });

      await t.step(
        "a review comment, picked with a note, reaches the plugin as one prompt quoting it",
        async () => {
          const mr = gl.mergeRequests[0];
          mr.diffs = [{ old_path: "NOTES.md", new_path: "NOTES.md", diff: "@@ -0,0 +1,2 @@\n+one\n+two\n" }];
          gl.addNote(mr, { body: "Looks fine overall.", author: "rev" });
          gl.addNote(mr, {
            body: "Please **sort** these <script>alert(1)</script> lines",
            author: "rev",
            position: { new_path: "NOTES.md", new_line: 2 },
          });
          const panel = page.locator(".mr-panel");
          await panel.locator(".mr-refresh").click();
          await waitFor(async () => await panel.locator(".mr-comment").count() === 2, "two comments");
          const inline = panel.locator(".mr-comment").filter({ hasText: "NOTES.md:2" });
          // Its place in the diff, as text.
          assert.match(await inline.locator(".mr-hunk .diff-line.add").last().innerText(), /^\+two$/);
          // The body is Markdown, its raw HTML shown as text.
          assert.equal(await inline.locator(".md strong").innerText(), "sort");
          assert.equal(await inline.locator(".md script").count(), 0);
          assert.match(await inline.locator(".md").innerText(), /<script>alert\(1\)<\/script>/);
          await inline.locator("input[type='checkbox']").check();
          await panel.locator("textarea[name='note']").fill("Only this one, please.");
          const prompts = () => agent.frames.filter((f) => f.type === "prompt");
          assert.equal(prompts().length, 0);
          await panel.locator(".mr-send button[type='submit']").click();
          await panel.locator("[data-sent]").waitFor();
          await waitFor(() => prompts().length === 1, "one prompt to the plugin");
          const message = String(prompts()[0].message);
          assert.match(message, /Only this one, please\./);
          assert.match(message, /NOTES\.md/);
          assert.match(message, /Please \*\*sort\*\* these/);
          assert.ok(!message.includes("Looks fine overall."), "only the picked comment is quoted");

          // Update with nothing new says so; a secret added since is refused with its place named.
          await panel.locator("[data-mr-update]").click();
          await waitFor(
            async () => /Nothing new/.test(await panel.locator("[data-mr-done]").innerText()),
            "nothing new",
          );
          const fake = "glpat-" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt";
          await agentDoes(engine, image, volume, 'printf "one\\nkey = %s\\n" "$1" > config.env', [fake]);
          const pushes = gitHttp.stats.pushes;
          await panel.locator("[data-mr-update]").click();
          await panel.locator("[data-failure='secrets']").waitFor({ timeout: 60_000 });
          assert.match(
            await panel.locator("[data-failure='secrets'] li").innerText(),
            /^config\.env:2 \(GitLab token\)$/,
          );
          assert.equal(gitHttp.stats.pushes, pushes);
          await agentDoes(engine, image, volume, "rm config.env");

          await panel.scrollIntoViewIfNeeded();
          await panel.screenshot({ path: `${ARTIFACTS}/ui-merge-request-phone.png` });
          await page.evaluate(() => scrollTo(0, 0));
          await page.screenshot({ path: `${ARTIFACTS}/ui-merge-request-phone-page.png`, fullPage: true });
          await ui.close();
          // The browser logs the refused push's answer; nothing else went wrong.
          assert.deepEqual(ui.problems, [
            "console: Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)",
          ]);
        },
      );

      await t.step("a viewer sees the merge request and its comments, and no action", async () => {
        const res = await daemon.api("/api/tokens", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ name: `viewer-${sessionId.slice(0, 8)}`, role: "viewer" }),
        });
        const viewer = await openPage(browser, { ...web, token: (await res.json()).token }, { signIn: true });
        await gotoHydrated(viewer, web, `/sessions/${sessionId}`);
        const panel = viewer.page.locator(".mr-panel");
        await panel.locator(".mr-comment").first().waitFor();
        assert.equal(await panel.locator(".mr-link").innerText(), "!1");
        assert.equal(await panel.locator(".mr-comment").count(), 2);
        assert.equal(await panel.locator("[data-mr-update], input[type='checkbox'], .mr-send").count(), 0);
        await screenshot(viewer.page, "ui-merge-request-viewer-wide");
        await viewer.close();
        assert.deepEqual(viewer.problems, []);
      });
    } finally {
      await agent.close();
      await browser.close();
      await env.close();
    }
  },
);
