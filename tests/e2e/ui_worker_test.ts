/**
 * The session page's Worker panel in real Chromium against the real daemon, a real Docker engine (stub
 * bridge) and the GitLab fixture: Stop keeps the work (the panel says stopped, the list groups it apart),
 * Resume brings the same session back online, a prompt typed on the stopped session's page resumes it and
 * is delivered once, Discard (confirmed) removes it with its storage.
 */
import assert from "node:assert/strict";
import { waitFor } from "../../testing/daemon.ts";
import { dockerTest } from "../../testing/docker.ts";
import { post, startSpawnEnv } from "../../testing/spawn_env.ts";
import { gotoHydrated, launchBrowser, openPage, screenshot } from "../../testing/chromium.ts";

dockerTest("UI: the worker panel stops, resumes and discards a spawned session", async (t) => {
  const env = await startSpawnEnv();
  const { d, engine } = env;
  const browser = await launchBrowser();
  const ui = await openPage(browser, d, { signIn: true });
  const { page } = ui;
  try {
    await post(d, "/api/gitlab/connect", { token: env.pat }).then((r) => r.body?.cancel());
    const spawned = await (await post(d, "/api/spawn", { repo: env.repos[0], ask: [] })).json();
    const id = spawned.sessionId as string;
    const online = async () =>
      ((await (await d.api("/api/sessions")).json()) as { id: string; online: boolean }[])
        .find((s) => s.id === id)?.online;
    await waitFor(online, "the hello", 60_000);
    await gotoHydrated(ui, d, `/sessions/${id}`);

    await t.step("Stop: the panel says stopped and offers Resume; the storage stays", async () => {
      await page.waitForSelector(".worker[data-container=running] button.stop");
      await page.click(".worker button.stop");
      await page.waitForSelector(".worker[data-container=stopped] button.resume", { timeout: 20_000 });
      assert.equal(await page.$("button.delete-session"), null, "Discard, in the panel, replaces Delete");
      const volumes = await engine.volumeList({ "lvmh.session": id });
      assert.equal(volumes.length, 2, "the working copy and the session volume stay");
      await screenshot(page, "worker-stopped");
    });

    await t.step("Resume: the same session comes back online", async () => {
      await page.click(".worker button.resume");
      await page.waitForSelector(".worker[data-container=running]", { timeout: 30_000 });
      await waitFor(online, "online again", 30_000);
    });

    await t.step("the list shows a stopped session in its own group", async () => {
      const stop = await d.api(`/api/sessions/${id}/container`, { method: "DELETE" });
      assert.equal(stop.status, 200);
      await stop.body?.cancel();
      await waitFor(async () => !(await online()), "offline", 20_000);
      await gotoHydrated(ui, d, "/");
      await page.waitForSelector(`.session-row[data-session="${id}"][data-group=stopped]`);
    });

    await t.step(
      "a prompt typed on the stopped session's page resumes it and is delivered once",
      async () => {
        await gotoHydrated(ui, d, `/sessions/${id}`);
        await page.waitForSelector(".offline-reason:has-text('sending a prompt resumes it')");
        assert.equal(await page.isEnabled("#prompt"), true, "the composer takes a prompt");
        assert.equal(await page.isEnabled("button.attach"), false, "but no images");
        await page.fill("#prompt", "wake from the page");
        await page.press("#prompt", "Enter");
        await page.waitForSelector(".composer :text('Resuming the session')");
        type Event = { message?: { role: string; text?: string } };
        const events = await waitFor(
          async () => {
            const all = (await (await d.api(`/api/sessions/${id}/events`)).json()) as Event[];
            return all.some((e) => e.message?.text === "echo: wake from the page") ? all : null;
          },
          "the prompt delivered after the resume",
          60_000,
        );
        const sent = events.filter((e) =>
          e.message?.role === "user" && e.message.text === "wake from the page"
        );
        assert.equal(sent.length, 1, "delivered once");
        await page.waitForSelector(".worker[data-container=running]", { timeout: 30_000 });
        const stop = await d.api(`/api/sessions/${id}/container`, { method: "DELETE" });
        assert.equal(stop.status, 200);
        await stop.body?.cancel();
        await waitFor(async () => !(await online()), "offline again", 20_000);
      },
    );

    await t.step("Discard, confirmed: the session and its storage are gone", async () => {
      await gotoHydrated(ui, d, `/sessions/${id}`);
      await page.waitForSelector(".worker[data-container=stopped] button.discard");
      page.removeAllListeners("dialog");
      page.once("dialog", (dialog) => void dialog.accept());
      await page.click(".worker button.discard");
      await page.waitForURL(`${d.url}/`, { timeout: 20_000 });
      assert.deepEqual(await engine.volumeList({ "lvmh.session": id }), []);
      const res = await d.api(`/api/sessions/${id}`);
      assert.equal(res.status, 404);
      await res.body?.cancel();
    });
    assert.deepEqual(ui.problems, []);
  } finally {
    await ui.close();
    await browser.close();
    await env.close();
  }
});
