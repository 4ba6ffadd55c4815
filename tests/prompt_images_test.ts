/**
 * The steering routes against the in-process daemon and a scripted plugin: a prompt's images are checked
 * before anything reaches the plugin (every bad case answers 400 or 413, and the plugin's next frame is the
 * good prompt that follows); a prompt with images larger than the ordinary body limit goes through whole;
 * `PUT /model` and `PUT /name` answer 202 with a commandId, 400 for an unknown model, 409 offline and 404
 * unknown.
 */
import assert from "node:assert/strict";
import { connectAgent, sessionInfo } from "../testing/agent.ts";
import { startInProcess } from "../testing/inproc.ts";
import { waitFor } from "../testing/daemon.ts";
import { MAX_BODY_BYTES } from "../lib/wire.ts";

/** A valid 1×1 PNG. */
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const JPEG = btoa(String.fromCharCode(0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46, 0, 1));

/** base64 of `n` bytes that start as a PNG. */
function pngOf(n: number): string {
  const bytes = new Uint8Array(n);
  bytes.set(Uint8Array.from(atob(PNG), (c) => c.charCodeAt(0)));
  let bin = "";
  for (let i = 0; i < n; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

const MODELS = [
  { provider: "fake", id: "fake-model", name: "Fake", input: ["text"], hasAuth: true },
  { provider: "fake", id: "fake-vision", name: "Vision", input: ["text", "image"], hasAuth: true },
];

Deno.test("prompt images, model and name routes", async (t) => {
  await using d = await startInProcess();
  const agent = await connectAgent(d, {
    sessionId: "s-images",
    session: sessionInfo("s-images", { models: MODELS }),
  });
  const sid = agent.sessionId;
  const post = (body: unknown) =>
    d.api(`/api/sessions/${sid}/prompt`, { method: "POST", body: JSON.stringify(body) });
  const put = (what: string, body: unknown, id = sid) =>
    d.api(`/api/sessions/${id}/${what}`, { method: "PUT", body: JSON.stringify(body) });
  try {
    await t.step("every bad image answers 400 or 413, and nothing reaches the plugin", async () => {
      const cases: [string, unknown[], number][] = [
        ["unknown type", [{ mimeType: "image/bmp", data: PNG }], 400],
        ["svg", [{ mimeType: "image/svg+xml", data: btoa("<svg/>") }], 400],
        ["bad base64", [{ mimeType: "image/png", data: "iVBO!!!=" }], 400],
        ["unpadded base64", [{ mimeType: "image/png", data: PNG.slice(0, -2) }], 400],
        ["empty data", [{ mimeType: "image/png", data: "" }], 400],
        ["a JPEG declared as PNG", [{ mimeType: "image/png", data: JPEG }], 400],
        ["text declared as GIF", [{ mimeType: "image/gif", data: btoa("hello world!") }], 400],
        ["eleven images", Array.from({ length: 11 }, () => ({ mimeType: "image/png", data: PNG })), 400],
        ["one image over 10 MiB", [{ mimeType: "image/png", data: pngOf(10 * 1024 * 1024 + 1) }], 413],
        [
          "three images over 20 MiB together",
          Array.from({ length: 3 }, () => ({ mimeType: "image/png", data: pngOf(7 * 1024 * 1024) })),
          413,
        ],
      ];
      for (const [what, images, status] of cases) {
        const res = await post({ message: "look", images });
        assert.equal(res.status, status, `${what}: ${await res.clone().text()}`);
        assert.match(res.headers.get("content-type") ?? "", /application\/json/);
        assert.ok(typeof (await res.json()).error === "string", what);
      }
      const huge = await post({
        message: "x",
        images: [{ mimeType: "image/png", data: "A".repeat(40 << 20) }],
      });
      assert.equal(huge.status, 413, "a body over the prompt limit");
      await huge.body?.cancel();
      const before = agent.frames.length;
      const ok = await post({
        message: "after the bad ones",
        images: [{ mimeType: "image/jpeg", data: JPEG }],
      });
      assert.equal(ok.status, 200);
      const { promptId } = await ok.json();
      const frame = await agent.waitFrame((f) => f.type === "prompt", "the good prompt");
      assert.equal(frame.promptId, promptId, "the first prompt frame is the good one");
      assert.equal(agent.frames.slice(before).filter((f) => f.type === "prompt").length, 1);
      assert.deepEqual(frame.images, [{ mimeType: "image/jpeg", data: JPEG }]);
    });

    await t.step("images larger than the ordinary body limit reach the plugin whole", async () => {
      const data = pngOf(3 * 1024 * 1024);
      assert.ok(data.length > MAX_BODY_BYTES * 4);
      const res = await post({
        message: "big",
        images: [{ mimeType: "image/png", data }, { mimeType: "image/png", data: PNG }],
      });
      assert.equal(res.status, 200, await res.clone().text());
      const { promptId } = await res.json();
      const frame = await agent.waitFrame(
        (f) => f.type === "prompt" && f.promptId === promptId,
        "big prompt",
        20_000,
      );
      const images = frame.images as { data: string }[];
      assert.equal(images.length, 2);
      assert.equal(images[0].data, data);
      // Other bodies keep the ordinary limit.
      const policy = await d.api(`/api/sessions/${sid}/policy`, {
        method: "PUT",
        body: JSON.stringify({ ask: [], pad: "x".repeat(MAX_BODY_BYTES) }),
      });
      assert.equal(policy.status, 413);
      await policy.body?.cancel();
    });

    await t.step(
      "PUT /model: 202 with a set_model frame, 400 for a model the session did not report",
      async () => {
        const res = await put("model", { provider: "fake", model: "fake-vision", thinking: "high" });
        assert.equal(res.status, 202, await res.clone().text());
        const { commandId } = await res.json();
        assert.ok(commandId);
        const f = await agent.waitFrame((f) => f.type === "set_model", "set_model");
        assert.deepEqual(
          { commandId: f.commandId, provider: f.provider, model: f.model, thinking: f.thinking, seq: f.seq },
          { commandId, provider: "fake", model: "fake-vision", thinking: "high", seq: 0 },
        );
        const unknown = await put("model", { provider: "fake", model: "nope" });
        assert.equal(unknown.status, 400);
        assert.match((await unknown.json()).error, /Unknown model "fake\/nope"/);
        const badThinking = await put("model", {
          provider: "fake",
          model: "fake-model",
          thinking: "extreme",
        });
        assert.equal(badThinking.status, 400);
        await badThinking.body?.cancel();
        assert.equal(agent.frames.filter((f) => f.type === "set_model").length, 1);
        const audit = await (await d.api("/api/audit")).json() as {
          action: string;
          detail: { model?: string };
        }[];
        assert.ok(audit.some((a) => a.action === "model" && a.detail.model === "fake-vision"));
      },
    );

    await t.step("PUT /name: 202 with a set_name frame; empty names are refused", async () => {
      const res = await put("name", { name: "  fix the login bug " });
      assert.equal(res.status, 202);
      const { commandId } = await res.json();
      const f = await agent.waitFrame((f) => f.type === "set_name", "set_name");
      assert.equal(f.commandId, commandId);
      assert.equal(f.name, "fix the login bug");
      const empty = await put("name", { name: "   " });
      assert.equal(empty.status, 400);
      await empty.body?.cancel();
    });

    await t.step("unknown session 404, offline 409", async () => {
      for (const what of ["model", "name"]) {
        const body = what === "model" ? { provider: "fake", model: "fake-model" } : { name: "n" };
        const missing = await put(what, body, "no-such-session");
        assert.equal(missing.status, 404, what);
        await missing.body?.cancel();
      }
      await agent.close();
      await waitForOffline(d, sid);
      const off = await put("model", { provider: "fake", model: "fake-model" });
      assert.equal(off.status, 409);
      await off.body?.cancel();
      const offName = await put("name", { name: "n" });
      assert.equal(offName.status, 409);
      await offName.body?.cancel();
    });
  } finally {
    await agent.close();
  }
});

function waitForOffline(d: { api(p: string): Promise<Response> }, id: string) {
  return waitFor(async () => !(await (await d.api(`/api/sessions/${id}`)).json()).online, "session offline");
}
