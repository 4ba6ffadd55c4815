/**
 * The composer's images and the model picker in real Chromium against the real daemon and a scripted plugin:
 * a pasted PNG shows as a thumbnail (removable), with a warning while the model takes no images, and reaches
 * the plugin byte for byte with the prompt; the picker lists only models with a key, sends `set_model`, and
 * says when the switch applies once the session reports the new model, or why pi refused it.
 */
import assert from "node:assert/strict";
import { freePort, startDaemon } from "../../testing/daemon.ts";
import { connectAgent, sessionInfo } from "../../testing/agent.ts";
import { gotoHydrated, launchBrowser, openPage, screenshot, type UiPage } from "../../testing/chromium.ts";

const ID = "composer-1";
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const MODELS = [
  { provider: "fake", id: "fake-model", name: "Fake Model", input: ["text"], hasAuth: true },
  { provider: "fake", id: "fake-vision", name: "Fake Vision", input: ["text", "image"], hasAuth: true },
  { provider: "other", id: "no-key", name: "No Key", input: ["text"], hasAuth: false },
];

/** Paste a PNG into the prompt box as a browser's clipboard would. */
function pastePng(page: UiPage["page"]) {
  return page.evaluate((b64: string) => {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const dt = new DataTransfer();
    dt.items.add(new File([bytes], "shot.png", { type: "image/png" }));
    const area = document.querySelector("#prompt")!;
    area.dispatchEvent(new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true }));
  }, PNG);
}

Deno.test("UI: composer images and the model picker", async (t) => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-ui-" });
  const daemon = await startDaemon({ dataDir, port: freePort() });
  const browser = await launchBrowser();
  const info = sessionInfo(ID, { name: "composer work", models: MODELS, modelSwitch: "next_run" });
  const agent = await connectAgent(daemon, { sessionId: ID, session: info });
  const ui = await openPage(browser, daemon, { signIn: true });
  const page = ui.page;
  try {
    await gotoHydrated(ui, daemon, `/sessions/${ID}`);
    await page.waitForSelector("[data-conn='open']");

    await t.step("a pasted image shows as a thumbnail with a warning, and can be removed", async () => {
      await pastePng(page);
      await page.waitForSelector(".composer-image img");
      assert.equal(
        await page.locator(".composer-image img").getAttribute("src"),
        `data:image/png;base64,${PNG}`,
      );
      await page.waitForSelector(".warn-no-images");
      await page.click(".remove-image");
      await page.waitForSelector(".composer-images", { state: "detached" });
    });

    await t.step("the image reaches the plugin with the prompt, byte for byte", async () => {
      await pastePng(page);
      await page.waitForSelector(".composer-image img");
      await page.fill("#prompt", "what is on this screenshot?");
      await page.press("#prompt", "Enter");
      const f = await agent.waitFrame((f) => f.type === "prompt", "prompt frame");
      assert.equal(f.message, "what is on this screenshot?");
      assert.deepEqual(f.images, [{ mimeType: "image/png", data: PNG }]);
      await page.waitForSelector(".composer-images", { state: "detached" });
    });

    await t.step("the picker lists models with a key and says when a switch applies", async () => {
      const options = await page.locator("#model-picker option").allTextContents();
      assert.deepEqual(options.map((o) => o.split(" (")[0]), ["Fake Model", "Fake Vision"]);
      await page.selectOption("#model-picker", "fake/fake-vision");
      const f = await agent.waitFrame((f) => f.type === "set_model", "set_model frame");
      assert.deepEqual([f.provider, f.model], ["fake", "fake-vision"]);
      agent.send("command_result", { commandId: f.commandId, ok: true });
      agent.send("session_info", { session: { ...info, model: "fake-vision" } });
      await page.waitForSelector("[data-model-switch='ok']");
      assert.match(await page.locator("[data-model-switch='ok']").innerText(), /next run/);
      await pastePng(page);
      await page.waitForSelector(".composer-image img");
      // The plugin's answer confirms the switch; the warning goes once the snapshot names the vision model.
      await page.waitForSelector(".warn-no-images", { state: "detached" });
      await screenshot(page, "ui_composer");
    });

    await t.step("a switch pi refuses says why, and the picker shows the model that stays", async () => {
      const before = agent.frames.filter((f) => f.type === "set_model").length;
      await page.selectOption("#model-picker", "fake/fake-model");
      const f = await agent.waitFrame(
        (f) => f.type === "set_model" && agent.frames.indexOf(f) >= before && f.model === "fake-model",
        "second set_model frame",
      );
      agent.send("command_result", { commandId: f.commandId, ok: false, error: "refused: no API key" });
      await page.waitForSelector("[data-model-switch='error']");
      assert.equal(
        await page.locator("[data-model-switch='error']").innerText(),
        "Not switched: refused: no API key",
      );
      assert.equal(await page.locator("#model-picker").inputValue(), "fake/fake-vision");
      assert.equal(await page.locator("#model-picker").isDisabled(), false, "the person can pick again");
    });
    assert.deepEqual(ui.problems, []);
  } finally {
    await ui.close();
    await browser.close();
    await agent.close();
    await daemon.stop();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
