/**
 * The webhooks page in real Chromium against the real daemon: viewers and operators get the top bar's
 * notification link but no webhooks link and a 403 page; the admin follows the top bar to /webhooks, adds an
 * endpoint (its signing secret shown once, then nowhere), sends a test delivery that a loopback receiver
 * verifies with that secret, reads the delivery log, sets a generated GitLab hook secret (shown once; the real
 * hook then takes it), clears it (the hook answers 404 again) and deletes the endpoint.
 */
import assert from "node:assert/strict";
import { type Daemon, freePort, startDaemon, waitFor } from "../../testing/daemon.ts";
import { gotoHydrated, launchBrowser, openPage, screenshot } from "../../testing/chromium.ts";
import { startReceiver } from "../../testing/fixtures/webhook_receiver.ts";
import { failedPipeline } from "../../testing/fixtures/gitlab_hooks/payloads.ts";

async function named(daemon: Daemon, name: string, role: string): Promise<Daemon> {
  const res = await daemon.api("/api/tokens", { method: "POST", body: JSON.stringify({ name, role }) });
  assert.equal(res.status, 201);
  const { token } = await res.json();
  return { ...daemon, token };
}

Deno.test("UI: the webhooks page and the top bar's links by role", async (t) => {
  const daemon = await startDaemon({ port: freePort() });
  const browser = await launchBrowser();
  // The receiver reads the secret at each request: it learns it from the page, as a person would.
  const receiverOptions = { secret: "" };
  const receiver = startReceiver(receiverOptions);
  const asViewer = await named(daemon, "vic", "viewer");
  const asOperator = await named(daemon, "otto", "operator");
  const viewer = await openPage(browser, asViewer, { signIn: true });
  const operator = await openPage(browser, asOperator, { signIn: true });
  const admin = await openPage(browser, daemon, { signIn: true });
  const hook = (secret: string) =>
    fetch(`${daemon.url}/hooks/gitlab`, {
      method: "POST",
      headers: {
        "x-gitlab-event": "Note Hook",
        "x-gitlab-token": secret,
        "content-type": "application/json",
      },
      body: JSON.stringify(failedPipeline("main")),
    });
  try {
    await t.step(
      "viewers and operators: a notifications link, no webhooks link, 403 on /webhooks",
      async () => {
        for (const [ui, who] of [[viewer, asViewer], [operator, asOperator]] as const) {
          await gotoHydrated(ui, who, "/");
          assert.equal(await ui.page.locator(".topbar a[href='/notifications']").count(), 1);
          assert.equal(await ui.page.locator(".topbar a[href='/webhooks']").count(), 0);
          const res = await ui.page.goto(`${daemon.url}/webhooks`);
          assert.equal(res?.status(), 403);
          await ui.page.waitForSelector("[data-forbidden]");
          assert.equal(await ui.page.locator("table, input").count(), 0, "no endpoints, no forms");
          assert.deepEqual(ui.problems.filter((p) => !p.includes("status of 403")), []);
        }
      },
    );

    const page = admin.page;
    let secret = "";
    await t.step("the admin reaches /webhooks from the top bar and adds an endpoint", async () => {
      await gotoHydrated(admin, daemon, "/");
      assert.equal(await page.locator(".topbar a[href='/notifications']").count(), 1);
      await page.click(".topbar a[href='/webhooks']");
      await page.waitForURL(`${daemon.url}/webhooks`);
      await page.waitForSelector("html[data-hydrated='1'] .webhooks-page");
      assert.match(await page.locator(".webhooks tbody").innerText(), /No outbound webhooks yet/);
      await page.fill("input[name=webhook-url]", receiver.url);
      // Defaults: what needs a person; add run.settled too.
      assert.deepEqual(
        await page.locator("input[name=webhook-event]:checked").evaluateAll((els) =>
          els.map((e) => (e as HTMLInputElement).value)
        ),
        ["approval.requested", "run.failed", "spawn.failed"],
      );
      await page.check("input[name=webhook-event][value='run.settled']");
      await page.getByRole("button", { name: "Add endpoint" }).click();
      secret = await page.locator("[data-new-webhook] input").inputValue();
      assert.match(secret, /^whsec_[A-Za-z0-9+/]{32}$/);
      receiverOptions.secret = secret;
      const [endpoint] = await (await daemon.api("/api/webhooks")).json();
      assert.deepEqual(endpoint.events, ["approval.requested", "run.settled", "run.failed", "spawn.failed"]);
      await page.waitForSelector(`[data-webhook='${endpoint.id}'] .last-delivery[data-last='none']`);
      await screenshot(page, "webhooks-created");
      await page.locator("[data-new-webhook]").getByRole("button", { name: "Done" }).click();
      assert.equal(await page.locator("[data-new-webhook]").count(), 0);
      await gotoHydrated(admin, daemon, "/webhooks");
      assert.equal((await page.content()).includes(secret), false, "the secret is shown only once");
    });

    await t.step("a test delivery is signed with that secret and shows as the last delivery", async () => {
      const row = page.locator("[data-webhook]");
      await row.getByRole("button", { name: "Send test" }).click();
      await page.waitForSelector("[data-webhook] .test-result:has-text('HTTP 200')");
      const got = await waitFor(
        () => receiver.successes().find((r) => r.body.type === "webhook.test"),
        "the test delivery",
      );
      assert.ok(got.verified, "the receiver verified it with the secret the page showed");
      assert.equal(got.body.data.by, "bootstrap", "the admin who sent it (the bootstrap token here)");
      await page.waitForSelector("[data-webhook] .last-delivery[data-last='done']");
      await row.getByRole("button", { name: "Deliveries" }).click();
      const log = await page.locator("[data-log]").innerText();
      assert.ok(log.includes(got.id), "the log names the delivery's webhook-id");
      assert.match(log, /webhook\.test/);
      await screenshot(page, "webhooks-tested");
    });

    await t.step("a generated GitLab hook secret is shown once, and the hook takes it", async () => {
      assert.match(await page.locator(".hook-state").innerText(), /^Off/);
      const before = await hook("whatever-secret-123456");
      assert.equal(before.status, 404);
      await before.body?.cancel();
      await page.getByRole("button", { name: "Generate" }).click();
      await page.getByRole("button", { name: "Save secret" }).click();
      const gitlabSecret = await page.locator("[data-new-gitlab-secret] input").inputValue();
      assert.match(gitlabSecret, /^[0-9a-f]{64}$/);
      await page.waitForSelector(".gitlab-hook[data-source='api']");
      assert.match(await page.locator(".hook-state").innerText(), /^On/);
      assert.equal(
        await page.locator(".gitlab-hook code").first().innerText(),
        `${daemon.url}/hooks/gitlab`,
        "the URL to paste into GitLab",
      );
      const res = await hook(gitlabSecret);
      assert.equal(res.status, 202);
      await res.body?.cancel();
      await gotoHydrated(admin, daemon, "/webhooks");
      assert.equal((await page.content()).includes(gitlabSecret), false, "never shown back");
      assert.equal(await page.locator("input[name=gitlab-secret]").inputValue(), "");

      // Clear asks first; this page agrees.
      await page.evaluate(() => globalThis.confirm = () => true);
      await page.getByRole("button", { name: "Clear" }).click();
      await page.waitForSelector(".gitlab-hook[data-source='none']");
      const after = await hook(gitlabSecret);
      assert.equal(after.status, 404, "cleared: the hook is off again");
      await after.body?.cancel();
    });

    await t.step("delete removes the endpoint", async () => {
      await page.evaluate(() => globalThis.confirm = () => true);
      await page.locator("[data-webhook]").getByRole("button", { name: "Delete" }).click();
      await page.waitForSelector("text=No outbound webhooks yet.");
      assert.deepEqual(await (await daemon.api("/api/webhooks")).json(), []);
      const audit = await (await daemon.api("/api/audit?limit=1000")).json();
      const acts = audit.map((e: { action: string }) => e.action).filter((a: string) => a !== "signin");
      assert.deepEqual(acts.filter((a: string) => a.startsWith("webhook.") || a.startsWith("hook.")), [
        "webhook.add",
        "webhook.test",
        "hook.gitlab.secret",
        "hook.gitlab.secret.clear",
        "webhook.remove",
      ]);
    });
    assert.deepEqual(admin.problems, []);
  } finally {
    await viewer.close();
    await operator.close();
    await admin.close();
    await browser.close();
    await receiver.close();
    await daemon.stop();
  }
});
