/**
 * Images in prompts with the real pi 0.73.1 and 1.6.0 (RPC mode) and the fake LLM: a PNG sent with
 * `POST /api/sessions/:id/prompt` reaches the LLM as an `image_url` content part, byte for byte, and the
 * plugin answers the prompt's command with ok. The model is a fake one that declares image input.
 */
import assert from "node:assert/strict";
import { startDaemon, waitFor } from "../../testing/daemon.ts";
import { startFakeLlm } from "../../testing/fixtures/fake_llm.mjs";
import {
  allEvents,
  assertInstalled,
  makePiHome,
  PI_VERSIONS,
  piRpc,
  sessions,
  useVisionModel,
} from "../../testing/pi.ts";

type Ev = Record<string, unknown> & { seq: number; type: string };
type Part = { type: string; text?: string; image_url?: { url: string } };

/** A valid 1×1 PNG (1.6.0 decodes every prompt image, so it must be a real one). */
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

for (const v of PI_VERSIONS) {
  Deno.test(`plugin on pi ${v.name}: a prompt's PNG reaches the LLM byte for byte`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using home = await makePiHome(llm.url);
    await useVisionModel(home, llm.url);
    await using d = await startDaemon();
    await using pi = piRpc(v, home, home.env(d));
    const online = await waitFor(async () => (await sessions(d)).find((s) => s.online), "pi online", 20_000);
    const id = online.id as string;
    const { models } = await (await d.api(`/api/sessions/${id}`)).json();
    const vision = (models as { id: string; input: string[] }[]).find((m) => m.id === "fake-vision");
    assert.deepEqual(vision?.input, ["text", "image"]);

    const res = await d.api(`/api/sessions/${id}/prompt`, {
      method: "POST",
      body: JSON.stringify({
        message: "TEXTONLY what is this?",
        images: [{ mimeType: "image/png", data: PNG }],
      }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    const { commandId } = await res.json();
    const req = await waitFor(
      () =>
        (llm.requests as { model: string; messages: { role: string; content: unknown }[] }[]).find((r) =>
          r.messages.some((m) =>
            Array.isArray(m.content) && (m.content as Part[]).some((p) => p.type === "image_url")
          )
        ),
      "an LLM request with the image",
    );
    assert.equal(req.model, "fake-vision");
    const user = req.messages.findLast((m) => m.role === "user")!;
    const parts = user.content as Part[];
    assert.equal(parts.find((p) => p.type === "text")?.text, "TEXTONLY what is this?");
    assert.equal(parts.find((p) => p.type === "image_url")?.image_url?.url, `data:image/png;base64,${PNG}`);
    const result = await waitFor(
      async () =>
        (await allEvents(d, id) as Ev[]).find((e) =>
          e.type === "command_result" && e.commandId === commandId
        ),
      "command_result",
    );
    assert.equal(result.ok, true);
    await waitFor(
      async () => (await allEvents(d, id) as Ev[]).some((e) => e.type === "agent_settled"),
      "run done",
    );
    await pi.stop();
    await llm.close();
  });
}
