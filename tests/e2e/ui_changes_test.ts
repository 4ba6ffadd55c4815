/**
 * The Changes view in real Chromium against the real daemon: a scripted plugin answers `changes` commands
 * with lib/changes run by real git on a real repository (as the plugin does in pi's cwd). The counts, the
 * file list, diffs side by side on a wide screen and unified on a phone, highlighting by language, the scope
 * switch, a lockfile's diff on demand, and a refresh when a run settles.
 */
import assert from "node:assert/strict";
import { startDaemon, waitFor } from "../../testing/daemon.ts";
import { type AgentClient, connectAgent, type Frame, sessionInfo } from "../../testing/agent.ts";
import { gotoHydrated, launchBrowser, openPage, screenshot } from "../../testing/chromium.ts";
import {
  CHANGES_SCRIPT,
  type ChangeScope,
  changesFromOutput,
  changesScriptArgs,
  newBoundary,
  PLUGIN_CHANGE_LIMITS,
} from "../../lib/changes/mod.ts";

const ID = "changes-ui-1";
const GIT_ENV = {
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_AUTHOR_NAME: "Ada",
  GIT_AUTHOR_EMAIL: "ada@example.invalid",
  GIT_COMMITTER_NAME: "Ada",
  GIT_COMMITTER_EMAIL: "ada@example.invalid",
};

async function git(cwd: string, ...args: string[]): Promise<void> {
  const out = await new Deno.Command("git", { args, cwd, env: GIT_ENV, stderr: "piped", stdout: "null" })
    .output();
  if (!out.success) throw new Error(`git ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
}

/** Answer every `changes` frame the way the plugin does, from the repository at `dir`. */
function answerChanges(agent: AgentClient, dir: string): () => void {
  let stopped = false;
  let handled = 0;
  (async () => {
    while (!stopped) {
      const f: Frame = await agent.waitFrame(
        (x) => x.type === "changes" && agent.frames.filter((y) => y.type === "changes").indexOf(x) >= handled,
        "a changes frame",
        60_000,
      ).catch(() => null as unknown as Frame);
      if (!f || stopped) return;
      handled++;
      const boundary = newBoundary();
      const scope = f.scope as ChangeScope;
      const out = await new Deno.Command("sh", {
        args: ["-c", CHANGES_SCRIPT, "lvmh-changes", ...changesScriptArgs(boundary, scope, null)],
        cwd: dir,
        stdout: "piped",
      }).output();
      const changes = changesFromOutput(new TextDecoder().decode(out.stdout), boundary, {
        scope,
        limits: PLUGIN_CHANGE_LIMITS,
        only: typeof f.path === "string" ? f.path : undefined,
      });
      agent.send("command_result", { commandId: f.commandId, ok: true, changes });
    }
  })();
  return () => {
    stopped = true;
  };
}

Deno.test("UI: the Changes view", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-ui-changes-" });
  await git(dir, "init", "-q", "-b", "main");
  await Deno.writeTextFile(`${dir}/app.ts`, "export const a = 1;\nexport const b = 2;\n");
  await git(dir, "add", "-A");
  await git(dir, "commit", "-q", "-m", "base");
  await Deno.writeTextFile(`${dir}/app.ts`, "export const a = 1;\nexport const b = 3;\n");
  await git(dir, "commit", "-q", "-am", "b is three");
  await Deno.writeTextFile(`${dir}/notes.md`, "# Notes\n");
  await Deno.writeTextFile(`${dir}/yarn.lock`, "dep@1:\n  version 1\n");

  await using daemon = await startDaemon();
  const browser = await launchBrowser();
  const agent = await connectAgent(daemon, { sessionId: ID, session: sessionInfo(ID, { cwd: dir }) });
  const stop = answerChanges(agent, dir);
  try {
    await t.step("wide screen: counts, commits, files, a side-by-side highlighted diff", async () => {
      const ui = await openPage(browser, daemon, { signIn: true, viewport: { width: 1400, height: 900 } });
      const page = ui.page;
      await gotoHydrated(ui, daemon, `/sessions/${ID}`);
      await page.click("button[data-view='changes']");
      await page.waitForSelector(".changes-view[data-changes='loaded']");
      // No upstream: the base is HEAD, so "since base" shows what is not committed yet.
      const files = await page.$$eval(".changed-file", (els) => els.map((e) => e.getAttribute("data-path")));
      assert.deepEqual(files, ["notes.md", "yarn.lock"]);
      assert.equal(await page.textContent("[data-stat='additions']"), "+3");
      assert.equal(await page.isHidden("main.conversation"), true);
      await page.waitForSelector(".changed-file[data-path='notes.md'] table.diff.split");
      // The lockfile is folded; its diff comes on demand.
      await page.click(".changed-file[data-path='yarn.lock'] summary");
      await page.click(".changed-file[data-path='yarn.lock'] button:has-text('Show diff')");
      await page.waitForSelector(".changed-file[data-path='yarn.lock'] table.diff");
      assert.match(
        await page.textContent(".changed-file[data-path='yarn.lock'] table.diff") ?? "",
        /version 1/,
      );

      // A run that commits and edits: the view reloads once it settles.
      agent.send("agent_start");
      await waitFor(async () => await page.textContent(".state") === "running", "running");
      await git(dir, "add", "-A");
      await git(dir, "commit", "-q", "-m", "notes and lock");
      await git(dir, "branch", "-q", "--set-upstream-to", "main");
      await Deno.writeTextFile(`${dir}/app.ts`, "export const a = 10;\nexport const b = 3;\n");
      agent.send("agent_end", { usage: {} });
      agent.send("agent_settled");
      await page.waitForSelector(".changed-file[data-path='app.ts'] table.diff.split .hljs-keyword");
      assert.deepEqual(
        await page.$$eval(".changed-file", (els) => els.map((e) => e.getAttribute("data-path"))),
        ["app.ts"],
      );
      await screenshot(page, "ui-changes-wide");
      await ui.close();
      assert.deepEqual(ui.problems, []);
    });

    await t.step("phone: a unified diff; the scope switch asks again", async () => {
      const ui = await openPage(browser, daemon, { signIn: true, viewport: { width: 390, height: 844 } });
      const page = ui.page;
      await gotoHydrated(ui, daemon, `/sessions/${ID}`);
      await page.click("button[data-view='changes']");
      await page.waitForSelector(".changed-file[data-path='app.ts'] table.diff.unified");
      const asked = agent.frames.filter((f) => f.type === "changes").length;
      await page.click(".scope-switch button:has-text('Uncommitted')");
      await waitFor(() => agent.frames.filter((f) => f.type === "changes").length > asked, "asked again");
      await page.waitForSelector(".changed-file[data-path='app.ts'] table.diff.unified");
      assert.equal(
        await page.getAttribute(".scope-switch button:has-text('Uncommitted')", "aria-pressed"),
        "true",
      );
      await screenshot(page, "ui-changes-phone");
      await ui.close();
      assert.deepEqual(ui.problems, []);
    });
  } finally {
    stop();
    await agent.close();
    await browser.close();
    await Deno.remove(dir, { recursive: true });
  }
});
