/**
 * The images and the sender of user messages on the session page, in real Chromium against the real daemon
 * and a scripted plugin: a web prompt from a named token shows "from the web · NAME" and its PNG as a
 * thumbnail that loads from the image route and opens full size on click (and closes again); an image pasted
 * in pi's terminal is a placeholder; live and after a reload (from the persisted events), within the CSP.
 */
import assert from "node:assert/strict";
import { bearerFetch, freePort, startDaemon } from "../../testing/daemon.ts";
import { connectAgent, sessionInfo } from "../../testing/agent.ts";
import { gotoHydrated, launchBrowser, openPage, screenshot } from "../../testing/chromium.ts";

const ID = "pictures-1";
/** A real 512×512 PNG (the app icon), so the browser decodes it and the enlarged view is larger. */
const ICON = await Deno.readFile(new URL("../../static/icon-512.png", import.meta.url));

function base64(bytes: Uint8Array): string {
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

async function sha256(bytes: Uint8Array): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
  return Array.from(d, (b) => b.toString(16).padStart(2, "0")).join("");
}

const userMessage = (id: string, text: string, images: Record<string, unknown>[]) => ({
  message: { role: "user", id, text, thinking: null, toolCalls: [], toolCallId: null, images },
});

Deno.test("UI: user messages show who sent them from the web, and their images", async (t) => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-ui-images-" });
  const daemon = await startDaemon({ dataDir, port: freePort() });
  const browser = await launchBrowser();
  const agent = await connectAgent(daemon, { sessionId: ID, session: sessionInfo(ID, { name: "pictures" }) });
  const ui = await openPage(browser, daemon, { signIn: true });
  const page = ui.page;
  try {
    const made = await daemon.api("/api/tokens", {
      method: "POST",
      body: JSON.stringify({ name: "alice", role: "operator" }),
    });
    const alice = bearerFetch(daemon.url, (await made.json()).token);
    await gotoHydrated(ui, daemon, `/sessions/${ID}`);
    await page.waitForSelector("[data-conn='open']");
    const sha = await sha256(ICON);
    const checkPage = async () => {
      const users = page.locator("article.msg.user");
      assert.equal(await users.count(), 2);
      assert.equal(await users.nth(0).locator(".via").textContent(), "from the web · alice");
      assert.equal(await users.nth(1).locator(".via").count(), 0, "typed in the terminal: no sender");
      const src = await users.nth(0).locator(".msg-image img").getAttribute("src");
      assert.equal(src, `/api/sessions/${ID}/images/${sha}`);
      await page.waitForFunction(
        () => {
          const img = document.querySelector<HTMLImageElement>(".msg-image img");
          return img !== null && img.complete && img.naturalWidth === 512;
        },
        undefined,
        { timeout: 10_000 },
      );
      assert.equal(
        (await users.nth(1).locator(".msg-image.missing").textContent())?.trim(),
        "image · PNG · 120 KB, sent from the terminal",
      );
    };

    await t.step("a web prompt arrives live with its sender and a thumbnail that loads", async () => {
      const res = await alice(`/api/sessions/${ID}/prompt`, {
        method: "POST",
        body: JSON.stringify({
          message: "what is this icon?",
          images: [{ mimeType: "image/png", data: base64(ICON) }],
        }),
      });
      assert.equal(res.status, 200);
      const { promptId } = await res.json();
      const frame = await agent.waitFrame(
        (f) => f.type === "prompt" && f.promptId === promptId,
        "the prompt",
      );
      assert.equal(frame.by, "alice");
      // What the plugin sends for it (tests/e2e/prompt_by_pi_test.ts checks the real one does).
      const from = { promptId, by: frame.by };
      agent.send("message_start", { message: { role: "user", id: "u1" }, from });
      agent.send("message_end", {
        ...userMessage("u1", "what is this icon?", [
          { type: "image", mimeType: "image/png", sha256: sha, bytes: ICON.length, source: "web" },
        ]),
        from,
      });
      agent.send("message_end", {
        ...userMessage("u2", "and this one, from my terminal", [
          {
            type: "image",
            mimeType: "image/png",
            sha256: "c".repeat(64),
            bytes: 120 * 1024,
            source: "terminal",
          },
        ]),
      });
      await page.waitForSelector(".msg.user .msg-image img");
      await checkPage();
    });

    await t.step("the thumbnail opens full size on click and closes again", async () => {
      const thumb = await page.locator(".msg-image img").boundingBox();
      await page.click(".msg-image");
      await page.waitForSelector("dialog.image-viewer[open] img");
      await page.waitForFunction(() => {
        const img = document.querySelector<HTMLImageElement>("dialog.image-viewer img");
        return img !== null && img.complete && img.naturalWidth > 0;
      });
      const big = await page.locator("dialog.image-viewer img").boundingBox();
      assert.ok(big && thumb && big.width > thumb.width * 2, `enlarged: ${big?.width} vs ${thumb?.width}`);
      assert.equal(page.url(), `${daemon.url}/sessions/${ID}`, "the page stayed");
      await screenshot(page, "ui_prompt_images_open");
      await page.click("dialog.image-viewer");
      await page.waitForSelector("dialog.image-viewer", { state: "detached" });
    });

    await t.step("after a reload the persisted events show the same", async () => {
      await gotoHydrated(ui, daemon, `/sessions/${ID}`);
      await checkPage();
      await screenshot(page, "ui_prompt_images");
    });
    assert.deepEqual(ui.problems, [], "no script error or CSP report");
  } finally {
    await ui.close();
    await browser.close();
    await agent.close();
    await daemon.stop();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
