/**
 * Who sent a prompt, and its images, on the user messages of the real pi 0.73.1 and 1.6.0 (RPC mode, the
 * fake LLM): a web prompt from a named token shows `from.by` with its name and its PNG as a `web` image part
 * whose sha256 the daemon serves; prompts queued while pi works — a web steer, a web follow-up, and a steer
 * typed into pi itself — each get their own sender (or none), in whatever order pi takes them.
 */
import assert from "node:assert/strict";
import { bearerFetch, startDaemon, waitFor } from "./_daemon.ts";
import { startFakeLlm } from "./fixtures/fake_llm.mjs";
import { allEvents, assertInstalled, makePiHome, modelsJson, PI_VERSIONS, piRpc, sessions } from "./_pi.ts";

type Ev = Record<string, unknown> & { seq: number; type: string };
type Msg = { role: string; id: string; text: string; images?: Record<string, unknown>[] };

/** A valid 1×1 PNG (1.6.0 decodes every prompt image, so it must be a real one). */
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const PNG_BYTES = Uint8Array.from(atob(PNG), (c) => c.charCodeAt(0));

async function sha256(bytes: Uint8Array): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
  return Array.from(d, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** models.json of `_pi.ts` plus a fake model that takes images, made the default. */
function visionModels(llmUrl: string): string {
  const json = JSON.parse(modelsJson(llmUrl));
  json.providers.fake.models.push({
    id: "fake-vision",
    name: "Fake Vision",
    reasoning: false,
    input: ["text", "image"],
    contextWindow: 128000,
    maxTokens: 4096,
  });
  return JSON.stringify(json);
}

for (const v of PI_VERSIONS) {
  Deno.test(`pi ${v.name}: user messages say who sent them from the web, with their images by sha256`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using home = await makePiHome(llm.url);
    await Deno.writeTextFile(`${home.agentDir}/models.json`, visionModels(llm.url));
    await Deno.writeTextFile(
      `${home.agentDir}/settings.json`,
      JSON.stringify({ defaultProvider: "fake", defaultModel: "fake-vision" }),
    );
    await using d = await startDaemon();
    const token = async (name: string) => {
      const res = await d.api("/api/tokens", {
        method: "POST",
        body: JSON.stringify({ name, role: "operator" }),
      });
      assert.equal(res.status, 201);
      return bearerFetch(d.url, (await res.json()).token);
    };
    const [alice, bob, carol] = [await token("alice"), await token("bob"), await token("carol")];
    await using pi = piRpc(v, home, home.env(d));
    const id = (await waitFor(async () => (await sessions(d)).find((s) => s.online), "pi online", 20_000))
      .id as string;
    const events = async () => await allEvents(d, id) as Ev[];
    const prompt = async (api: typeof alice, body: Record<string, unknown>) => {
      const res = await api(`/api/sessions/${id}/prompt`, { method: "POST", body: JSON.stringify(body) });
      assert.equal(res.status, 200, await res.clone().text());
      return (await res.json()).promptId as string;
    };

    // Idle: alice's prompt starts a run whose bash call sleeps, so the next three queue behind it.
    const first = await prompt(alice, {
      message: "SLEEPTOOL look at this",
      images: [{ mimeType: "image/png", data: PNG }],
    });
    await waitFor(
      async () => (await events()).some((e) => e.type === "tool_execution_start"),
      "the bash call",
    );
    const steer = await prompt(bob, { message: "TEXTONLY steer from bob" });
    const follow = await prompt(carol, { message: "TEXTONLY follow-up from carol", deliverAs: "followUp" });
    await pi.command({ type: "steer", message: "TEXTONLY typed in the terminal" });
    await waitFor(
      async () => {
        const evs = await events();
        const users = evs.filter((e) => e.type === "message_end" && (e.message as Msg).role === "user");
        return users.length === 4 && evs.at(-1)?.type === "agent_settled";
      },
      "four user messages and the run settled",
      60_000,
    );

    const evs = await events();
    const byText = (text: string) => {
      const end = evs.find((e) =>
        e.type === "message_end" && (e.message as Msg).role === "user" &&
        (e.message as Msg).text.startsWith(text)
      );
      assert.ok(end, `a user message "${text}"`);
      const start = evs.findLast((e) => e.type === "message_start" && e.seq < end.seq);
      assert.equal((start!.message as Msg).id, (end.message as Msg).id, "its message_start");
      return { start: start!, end };
    };
    const sha = await sha256(PNG_BYTES);
    const a = byText("SLEEPTOOL look at this");
    assert.deepEqual(a.start.from, { promptId: first, by: "alice" });
    assert.deepEqual(a.end.from, { promptId: first, by: "alice" });
    assert.deepEqual((a.end.message as Msg).images, [
      { type: "image", mimeType: "image/png", sha256: sha, bytes: PNG_BYTES.length, source: "web" },
    ]);
    assert.equal((a.end.message as Msg).text.includes("[image]"), false, "no marker beside the image part");
    assert.deepEqual(byText("TEXTONLY steer from bob").end.from, { promptId: steer, by: "bob" });
    assert.deepEqual(byText("TEXTONLY follow-up from carol").start.from, { promptId: follow, by: "carol" });
    const typed = byText("TEXTONLY typed in the terminal");
    assert.equal(typed.start.from, undefined, "typed in pi: no sender");
    assert.equal(typed.end.from, undefined);

    // The image the user message names is the one the daemon stored: served to a viewer, byte for byte.
    const img = await d.api(`/api/sessions/${id}/images/${sha}`);
    assert.equal(img.status, 200);
    assert.equal(img.headers.get("content-type"), "image/png");
    assert.deepEqual(new Uint8Array(await img.arrayBuffer()), PNG_BYTES);

    await pi.stop();
    await llm.close();
  });
}
