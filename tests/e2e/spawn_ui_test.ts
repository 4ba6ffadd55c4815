/**
 * The spawn panel in real Chromium against the real daemon, a real Docker engine (stub bridge) and the GitLab
 * fixture: connect with a token, search and pick a repository, spawn, watch the job run, stop it.
 */
import assert from "node:assert/strict";
import { waitFor } from "../../testing/daemon.ts";
import { dockerTest } from "../../testing/docker.ts";
import { startSpawnEnv } from "../../testing/spawn_env.ts";
import { gotoHydrated, launchBrowser, openPage, screenshot } from "../../testing/chromium.ts";

dockerTest("UI: spawn panel connects GitLab, spawns on a picked repo and stops it", async (t) => {
  const env = await startSpawnEnv({ repoCount: 3 });
  const { d } = env;
  const browser = await launchBrowser();
  const ui = await openPage(browser, d, { signIn: true });
  const { page } = ui;
  const repo = env.repos[1];
  try {
    await gotoHydrated(ui, d, "/");

    await t.step(
      "a wrong token shows GitLab's refusal; the right one lists repos, newest first",
      async () => {
        await page.fill("input[name=gitlab-token]", "glpat-not-the-token");
        await page.click(".spawn-connect button[type=submit]");
        await page.waitForSelector(".spawn-panel .error:has-text('rejected')");
        await page.fill("input[name=gitlab-token]", env.pat);
        await page.click(".spawn-connect button[type=submit]");
        await page.waitForSelector(".repo-list button.repo");
        const listed = await page.$$eval(
          ".repo-list button.repo",
          (els) => els.map((e) => e.getAttribute("data-repo")),
        );
        assert.deepEqual(listed, [...env.repos].reverse());
        assert.ok(!(await page.content()).includes(env.pat), "the token must not stay in the page");
        assert.match(await page.textContent(".spawn-form") ?? "", /as alice/);
      },
    );

    await t.step(
      "search narrows the list; pick one and spawn; the job runs and the session is listed",
      async () => {
        await page.fill("input[name=repo-filter]", `sub ${repo.split("/").at(-1)}`); // two words, both must match
        await waitFor(async () => (await page.$$(".repo-list button.repo")).length === 1, "one match");
        await page.click(`.repo-list button[data-repo="${repo}"]`);
        await page.click(".spawn-form button[type=submit]");
        await page.waitForSelector(".spawn-job[data-state=running]", { timeout: 30_000 });
        assert.match(await page.textContent(".spawn-job[data-state=running]") ?? "", new RegExp(repo));
        await page.waitForSelector(".session-row.online .badge.container", { timeout: 20_000 });
        await screenshot(page, "spawn-running");
      },
    );

    await t.step("stop removes the container; the job shows stopped", async () => {
      await page.click(".spawn-job[data-state=running] button.danger");
      await page.waitForSelector(".spawn-job[data-state=stopped]", { timeout: 20_000 });
      assert.deepEqual(await env.engine.containerList({ "lvmh.repo": repo, "lvmh.kind": "worker" }), []);
      await page.waitForSelector(".session-row.offline");
    });
    // The one failed request the test caused on purpose: the refused token (400).
    assert.deepEqual(ui.problems.filter((p) => !p.includes("status of 400")), []);
  } finally {
    await ui.close();
    await browser.close();
    await env.close();
  }
});
