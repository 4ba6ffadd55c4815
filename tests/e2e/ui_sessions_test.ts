/**
 * The sessions page in real Chromium against the real daemon, fed by scripted plugins: sign-in, the live list,
 * filters, hostile session fields rendered inert, and the phone layout. Screenshots go to test-artifacts/.
 */
import assert from "node:assert/strict";
import { freePort, startDaemon, waitFor } from "../../testing/daemon.ts";
import { connectAgent, sessionInfo } from "../../testing/agent.ts";
import { gotoHydrated, launchBrowser, openPage, screenshot } from "../../testing/chromium.ts";

const XSS = {
  name: `<img src=x onerror="window.__xss='name'">`,
  cwd: `/tmp/<script>window.__xss='cwd'</script>`,
  model: `"><svg onload="window.__xss='model'">`,
  repo: `javascript:window.__xss='repo'`,
};

Deno.test("UI: sessions page", async (t) => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-ui-" });
  const port = freePort();
  let daemon = await startDaemon({ dataDir, port });
  const browser = await launchBrowser();
  const agents: Awaited<ReturnType<typeof connectAgent>>[] = [];
  try {
    agents.push(
      await connectAgent(daemon, {
        sessionId: "alpha",
        session: sessionInfo("alpha", { name: "secret alpha work", cwd: "/home/dev/alpha-app" }),
      }),
    );
    agents[0].send("message_end", {
      message: { role: "user", id: "u1", text: "hello", thinking: null, toolCalls: [], toolCallId: null },
    });

    await t.step("without credentials: only the sign-in form, no session data", async () => {
      const res = await fetch(`${daemon.url}/`);
      assert.equal(res.status, 401);
      assert.match(res.headers.get("content-type") ?? "", /^text\/html/);
      assert.match(res.headers.get("content-security-policy") ?? "", /script-src 'self'/);
      const html = await res.text();
      assert.ok(!html.includes("secret alpha") && !html.includes("alpha-app"), "session data leaked");
      const page = await fetch(`${daemon.url}/sessions/alpha`);
      assert.equal(page.status, 401);
      assert.ok(!(await page.text()).includes("secret alpha"));
    });

    await t.step(
      "sign-in: a wrong token is refused, the right one shows the list and is remembered",
      async () => {
        const ui = await openPage(browser, daemon);
        try {
          await gotoHydrated(ui, daemon, "/");
          await screenshot(ui.page, "signin");
          await ui.page.fill("#token", "wrong-token");
          await ui.page.click("button[type=submit]");
          await ui.page.waitForSelector("text=That token was not accepted.");
          await ui.page.fill("#token", daemon.token);
          await ui.page.click("button[type=submit]");
          await ui.page.waitForSelector("[data-session='alpha']");
          await ui.page.waitForSelector("html[data-hydrated='1']");
          assert.equal(await ui.page.evaluate(() => localStorage.getItem("lvmh.token")), daemon.token);
          const cookies = await ui.context.cookies();
          const c = cookies.find((c) => c.name === "lvmh_auth");
          assert.ok(c && c.httpOnly && c.sameSite === "Strict", "HttpOnly SameSite=Strict cookie");
          assert.notEqual(c.value, daemon.token, "the cookie never holds the raw token");
          assert.deepEqual(ui.problems.filter((p) => !p.includes("401")), []);
        } finally {
          await ui.close();
        }
      },
    );

    const ui = await openPage(browser, daemon, { signIn: true });
    try {
      await t.step("live list: new sessions, running state and offline appear without reload", async () => {
        const sockets: string[] = [];
        ui.page.on("websocket", (ws) => sockets.push(ws.url()));
        await gotoHydrated(ui, daemon, "/");
        await ui.page.waitForSelector("[data-conn='open']");
        const row = ui.page.locator("[data-session='alpha']");
        assert.match(await row.innerText(), /secret alpha work/);
        assert.match(await row.innerText(), /alpha-app/);
        assert.match(await row.innerText(), /local/);

        const beta = await connectAgent(daemon, {
          sessionId: "beta",
          session: sessionInfo("beta", {
            name: "beta in a box",
            agent: true,
            repo: "group/beta",
            startedAt: Date.now(),
          }),
        });
        agents.push(beta);
        await ui.page.waitForSelector("[data-session='beta']");
        assert.match(await ui.page.locator("[data-session='beta']").innerText(), /container/);
        assert.match(await ui.page.locator("[data-session='beta']").innerText(), /group\/beta/);
        assert.match(await ui.page.locator("[data-session='beta'] .when").innerText(), /^started just now$/);

        beta.send("agent_start");
        await ui.page.waitForSelector("[data-session='beta'] .state.running");
        assert.equal(await ui.page.locator("[data-session='beta'] .when").innerText(), "just now");
        assert.equal(await ui.page.title(), "(1 running) Sessions · lvmh");
        // Most recent activity first.
        assert.equal(await ui.page.locator(".session-row").first().getAttribute("data-session"), "beta");
        beta.send("agent_end", { usage: {} });
        await ui.page.waitForSelector("[data-session='beta'] .state.settled");

        await agents[0].close();
        await ui.page.waitForSelector("[data-session='alpha'].offline");
        await screenshot(ui.page, "sessions-desktop");
        // The list, the spawn panel and the top bar share the page's one live connection.
        assert.equal(sockets.filter((u) => new URL(u).pathname === "/ws").length, 1, sockets.join(", "));
      });

      await t.step("filters: text and online only", async () => {
        await ui.page.keyboard.press("/");
        assert.equal(
          await ui.page.evaluate(() => document.activeElement?.id),
          "filter",
          "/ focuses the filter",
        );
        await ui.page.keyboard.type("box");
        await waitFor(async () => await ui.page.locator(".session-row").count() === 1, "one match");
        assert.equal(await ui.page.locator(".session-row").getAttribute("data-session"), "beta");
        await ui.page.fill("#filter", "");
        await ui.page.check("#online-only");
        await waitFor(async () => await ui.page.locator(".session-row").count() === 1, "online only");
        assert.equal(await ui.page.locator(".session-row").getAttribute("data-session"), "beta");
        await ui.page.uncheck("#online-only");
        await waitFor(async () => await ui.page.locator(".session-row").count() === 2, "both again");
      });

      await t.step("hostile session fields are shown as text and never run", async () => {
        const evil = await connectAgent(daemon, { sessionId: "evil", session: sessionInfo("evil", XSS) });
        agents.push(evil);
        await ui.page.waitForSelector("[data-session='evil']");
        const text = await ui.page.locator("[data-session='evil']").innerText();
        assert.ok(text.includes(XSS.name), `name shown literally: ${text}`);
        // A fresh server render must be inert too.
        await gotoHydrated(ui, daemon, "/");
        await gotoHydrated(ui, daemon, "/sessions/evil");
        assert.ok((await ui.page.locator(".facts").innerText()).includes("<script>"));
        assert.equal(await ui.page.evaluate(() => (globalThis as { __xss?: string }).__xss ?? null), null);
        assert.equal(await ui.page.locator("img, svg, iframe").count(), 0);
        assert.deepEqual(ui.problems, []);
      });
    } finally {
      await ui.close();
    }

    await t.step("phone layout: 375 px wide, no horizontal scrolling", async () => {
      const phone = await openPage(browser, daemon, { signIn: true, viewport: { width: 375, height: 740 } });
      try {
        await gotoHydrated(phone, daemon, "/");
        await phone.page.waitForSelector("[data-session='beta']");
        const width = await phone.page.evaluate(() => document.documentElement.scrollWidth);
        assert.ok(width <= 375, `page is ${width} px wide`);
        await screenshot(phone.page, "sessions-mobile");
        assert.deepEqual(phone.problems, []);
      } finally {
        await phone.close();
      }
    });
    await t.step("a remembered token signs in again by itself; sign-out forgets both", async () => {
      const back = await openPage(browser, daemon);
      try {
        // localStorage holds the token but there is no cookie (expired, or cleared by the browser).
        await back.context.addInitScript((token: string) => {
          if (!sessionStorage.getItem("seeded")) {
            sessionStorage.setItem("seeded", "1");
            localStorage.setItem("lvmh.token", token);
          }
        }, daemon.token);
        await back.page.goto(`${daemon.url}/`);
        await back.page.waitForSelector("[data-session='beta']");
        await back.page.waitForSelector("html[data-hydrated='1']");
        await back.page.click("text=Sign out");
        await back.page.waitForSelector("#token");
        assert.equal(await back.page.evaluate(() => localStorage.getItem("lvmh.token")), null);
        assert.equal(
          (await back.context.cookies()).filter((c) => c.name === "lvmh_auth" && c.value).length,
          0,
        );
        const html = await back.page.content();
        assert.ok(!html.includes("beta in a box"), "signed out: no session data");
      } finally {
        await back.close();
      }
    });

    await t.step("token rotated while a page is open: the page asks for the token again", async () => {
      const stale = await openPage(browser, daemon, { signIn: true });
      try {
        await gotoHydrated(stale, daemon, "/");
        await stale.page.waitForSelector("[data-conn='open']");
        for (const a of agents) await a.close().catch(() => {});
        await daemon.stop();
        daemon = await startDaemon({ dataDir, port, token: "rotated-token-abcdef0123456789" });
        await stale.page.waitForSelector(".overlay #token", { timeout: 20_000 });
        assert.match(await stale.page.locator(".overlay").innerText(), /no longer accepts/);
        assert.equal(
          await stale.page.evaluate(() => localStorage.getItem("lvmh.token")),
          null,
          "stale token dropped",
        );
        await stale.page.fill(".overlay #token", daemon.token);
        await stale.page.click(".overlay button[type=submit]");
        await stale.page.waitForSelector("[data-session='beta']");
        await stale.page.waitForSelector("[data-conn='open']");
        assert.equal(await stale.page.locator(".overlay").count(), 0);
      } finally {
        await stale.close();
      }
    });
  } finally {
    for (const a of agents) await a.close().catch(() => {});
    await browser.close();
    await daemon.stop();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
