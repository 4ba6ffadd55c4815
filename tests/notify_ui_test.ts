/**
 * Web push in real Chromium against the real daemon: the notification settings page registers the service
 * worker when the person opts in (the offline browser then cannot reach its own push service, and says so
 * without a script error); a push delivered through the DevTools protocol (`ServiceWorker.deliverPushMessage`,
 * with the payload the daemon builds) is shown as a notification by the worker, and its click path opens the
 * session's approval in a new window. The page links the web app manifest, whose icons are served.
 */
import assert from "node:assert/strict";
import { freePort, startDaemon, waitFor } from "./_daemon.ts";
import { connectAgent, sessionInfo } from "./_agent_client.ts";
import { gotoHydrated, launchBrowser, openPage, screenshot } from "./_browser.ts";
import { payloadOf } from "../lib/notify/push.ts";

const ID = "push-ui-1";

Deno.test("UI: web push notification and its click", async (t) => {
  const daemon = await startDaemon({ port: freePort() });
  const browser = await launchBrowser();
  const agent = await connectAgent(daemon, {
    sessionId: ID,
    session: sessionInfo(ID, { name: "lunch run" }),
  });
  const ui = await openPage(browser, daemon, { signIn: true });
  try {
    await ui.context.grantPermissions(["notifications"], { origin: daemon.url });
    const page = ui.page;

    await t.step("the manifest is linked and served with its icons", async () => {
      await gotoHydrated(ui, daemon, "/notifications");
      const href = await page.getAttribute("link[rel=manifest]", "href");
      assert.equal(href, "/static/manifest.webmanifest");
      const res = await fetch(`${daemon.url}${href}`);
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type")!, /application\/manifest\+json/);
      const manifest = await res.json();
      assert.equal(manifest.start_url, "/");
      for (const i of manifest.icons) {
        const icon = await fetch(`${daemon.url}${i.src}`);
        assert.equal(icon.status, 200, i.src);
        assert.equal(icon.headers.get("content-type"), "image/png");
        await icon.body?.cancel();
      }
    });

    await t.step("opting in registers the service worker", async () => {
      await page.waitForSelector(".notify-settings[data-ready='1'][data-status='off']");
      await page.getByRole("button", { name: "Notify me on this browser" }).click();
      // Offline, Chromium cannot reach its push service: the panel says so; online it would be subscribed.
      await page.waitForSelector(".notify-settings [role=alert], .notify-settings[data-status='on']");
      const active = await page.evaluate(async () => {
        const reg = await navigator.serviceWorker.getRegistration("/");
        return reg?.active?.scriptURL ?? null;
      });
      assert.equal(active, `${daemon.url}/static/sw.js`);
      await screenshot(page, "notify-settings");
    });

    await t.step("a push is shown as a notification; its click opens the approval", async () => {
      const cdp = await ui.context.newCDPSession(page);
      const registrations: { registrationId: string; scopeURL: string }[] = [];
      cdp.on("ServiceWorker.workerRegistrationUpdated", (e) => registrations.push(...e.registrations));
      await cdp.send("ServiceWorker.enable");
      const reg = await waitFor(
        () => registrations.find((r) => r.scopeURL === `${daemon.url}/`),
        "the registration over CDP",
      );
      const payload = payloadOf({
        type: "approval.requested",
        at: Date.now(),
        sessionId: ID,
        data: { sessionName: "lunch run", toolName: "bash", path: `/sessions/${ID}#approval-a1` },
      });
      await cdp.send("ServiceWorker.deliverPushMessage", {
        origin: daemon.url,
        registrationId: reg.registrationId,
        data: JSON.stringify(payload),
      });
      const shown = await waitFor(async () => {
        const list = await page.evaluate(async () => {
          const r = await navigator.serviceWorker.getRegistration("/");
          const ns = await r!.getNotifications();
          return ns.map((n) => ({ title: n.title, body: n.body, tag: n.tag, data: n.data }));
        });
        return list.length === 1 ? list[0] : null;
      }, "the notification");
      assert.equal(shown.title, "lunch run needs approval");
      assert.equal(shown.body, "bash waits for you");
      assert.equal(shown.tag, `approval.requested:${ID}`);
      assert.equal(shown.data.url, `/sessions/${ID}#approval-a1`);

      // The worker sends this lvmh window (it controls it) to the approval: the path a click takes.
      await page.evaluate(async (tag) => {
        const r = await navigator.serviceWorker.getRegistration("/");
        r!.active!.postMessage({ type: "lvmh:click", tag });
      }, shown.tag);
      await page.waitForURL(`${daemon.url}/sessions/${ID}#approval-a1`);
      await page.waitForSelector("html[data-hydrated='1']", { timeout: 10_000 });
      const left = await page.evaluate(async () => {
        const r = await navigator.serviceWorker.getRegistration("/");
        return (await r!.getNotifications()).length;
      });
      assert.equal(left, 0, "the clicked notification is closed");
    });

    // Chromium's own note about push in its private contexts (every Playwright context) is no error of ours.
    assert.deepEqual(
      ui.problems.filter((p) => !p.includes("does not support the Push API in incognito")),
      [],
    );
  } finally {
    await ui.close();
    await agent.close();
    await browser.close();
    await daemon.stop();
  }
});
