/**
 * Who sent a prompt, and its images, on the user messages of the real pi 0.73.1 and 1.6.0 (RPC mode, the
 * fake LLM): a web prompt from a named token shows `from.by` with its name and its PNG as a `web` image part
 * whose sha256 the daemon serves; prompts queued while pi works — a web steer, a web follow-up, and a steer
 * typed into pi itself — each get their own sender (or none), in whatever order pi takes them; a hook's prompt
 * names the hook. An image pi 1.6.0 scales down is still named by the bytes the daemon stored.
 */
import assert from "node:assert/strict";
import { bearerFetch, startDaemon, waitFor } from "../../testing/daemon.ts";
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
type Msg = { role: string; id: string; text: string; images?: Record<string, unknown>[] };

/** A valid 1×1 PNG (1.6.0 decodes every prompt image, so it must be a real one). */
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const PNG_BYTES = Uint8Array.from(atob(PNG), (c) => c.charCodeAt(0));

async function sha256(bytes: Uint8Array): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
  return Array.from(d, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** A real RGB PNG of `w`×`h` pixels (a gradient), built here so its size can pass pi 1.6.0's 2000 px limit. */
async function makePng(w: number, h: number): Promise<Uint8Array> {
  const raw = new Uint8Array((w * 3 + 1) * h);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) raw.set([x % 256, y % 256, 128], y * (w * 3 + 1) + 1 + x * 3);
  }
  // PNG's IDAT is a zlib stream, which is what CompressionStream("deflate") writes.
  const zlib = new Uint8Array(
    await new Response(new Blob([raw]).stream().pipeThrough(new CompressionStream("deflate"))).arrayBuffer(),
  );
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const chunk = (type: string, data: Uint8Array) => {
    const out = new Uint8Array(12 + data.length);
    const view = new DataView(out.buffer);
    view.setUint32(0, data.length);
    out.set([...type].map((c) => c.charCodeAt(0)), 4);
    out.set(data, 8);
    let crc = 0xffffffff;
    for (const b of out.subarray(4, 8 + data.length)) crc = crcTable[(crc ^ b) & 0xff] ^ (crc >>> 8);
    view.setUint32(8 + data.length, (crc ^ 0xffffffff) >>> 0);
    return out;
  };
  const ihdr = new Uint8Array(13);
  new DataView(ihdr.buffer).setUint32(0, w);
  new DataView(ihdr.buffer).setUint32(4, h);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8 bits, RGB, deflate, no filter, no interlace
  const parts = [
    new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", zlib),
    chunk("IEND", new Uint8Array()),
  ];
  const png = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => (png.set(p, at), at + p.length), 0);
  return png;
}

function base64(bytes: Uint8Array): string {
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

for (const v of PI_VERSIONS) {
  Deno.test(`pi ${v.name}: user messages say who sent them from the web, with their images by sha256`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using home = await makePiHome(llm.url);
    await useVisionModel(home, llm.url);
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
    assert.deepEqual(a.start.from, { promptId: first, by: "alice", source: "web" });
    assert.deepEqual(a.end.from, { promptId: first, by: "alice", source: "web" });
    assert.deepEqual((a.end.message as Msg).images, [
      { type: "image", mimeType: "image/png", sha256: sha, bytes: PNG_BYTES.length, source: "web" },
    ]);
    assert.equal((a.end.message as Msg).text.includes("[image]"), false, "no marker beside the image part");
    assert.deepEqual(byText("TEXTONLY steer from bob").end.from, {
      promptId: steer,
      by: "bob",
      source: "web",
    });
    assert.deepEqual(byText("TEXTONLY follow-up from carol").start.from, {
      promptId: follow,
      by: "carol",
      source: "web",
    });
    const typed = byText("TEXTONLY typed in the terminal");
    assert.equal(typed.start.from, undefined, "typed in pi: no sender");
    assert.equal(typed.end.from, undefined);

    // A generic hook's prompt names the hook, with the token that called it.
    const hook = await alice("/hooks/generic", {
      method: "POST",
      body: JSON.stringify({ sessionId: id, message: "TEXTONLY from a hook" }),
    });
    assert.equal(hook.status, 202, await hook.clone().text());
    await hook.body?.cancel();
    const fromHook = await waitFor(
      async () =>
        (await events()).find((e) =>
          e.type === "message_end" && (e.message as Msg).text === "TEXTONLY from a hook"
        ),
      "the hook's user message",
    );
    assert.equal((fromHook.from as { by?: string }).by, "hook:alice");

    // The image the user message names is the one the daemon stored: served to a viewer, byte for byte.
    const img = await d.api(`/api/sessions/${id}/images/${sha}`);
    assert.equal(img.status, 200);
    assert.equal(img.headers.get("content-type"), "image/png");
    assert.deepEqual(new Uint8Array(await img.arrayBuffer()), PNG_BYTES);

    await pi.stop();
    await llm.close();
  });
}

for (const v of PI_VERSIONS) {
  Deno.test(`pi ${v.name}: an image pi may resize is still named by the bytes the daemon stored`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using home = await makePiHome(llm.url);
    await useVisionModel(home, llm.url);
    await using d = await startDaemon();
    await using pi = piRpc(v, home, home.env(d));
    const id = (await waitFor(async () => (await sessions(d)).find((s) => s.online), "pi online", 20_000))
      .id as string;
    const wide = await makePng(2400, 30);
    const res = await d.api(`/api/sessions/${id}/prompt`, {
      method: "POST",
      body: JSON.stringify({
        message: "TEXTONLY wide",
        images: [{ mimeType: "image/png", data: base64(wide) }],
      }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    const { promptId } = await res.json();
    const end = await waitFor(
      async () =>
        (await allEvents(d, id) as Ev[]).find((e) =>
          e.type === "message_end" && (e.message as Msg).role === "user"
        ),
      "the user message",
    );
    const url = await waitFor(() => {
      const parts = (llm.requests as { messages: { role: string; content: unknown }[] }[])
        .flatMap((r) => r.messages).filter((m) => m.role === "user" && Array.isArray(m.content))
        .flatMap((m) => m.content as { type: string; image_url?: { url: string } }[]);
      return parts.find((p) => p.type === "image_url")?.image_url?.url;
    }, "the LLM request with the image");
    const resized = url !== `data:image/png;base64,${base64(wide)}`;
    // 0.73.1 passes the bytes on as sent; 1.6.0 scales anything over 2000 px down and says so in the text.
    assert.equal(resized, v.name !== "0.73.1", `pi ${v.name} resizes: ${resized}`);
    const message = end.message as Msg;
    if (resized) assert.match(message.text, /^TEXTONLY wide\n\n\[Image: original 2400x30/);
    else assert.equal(message.text, "TEXTONLY wide");
    assert.deepEqual(
      end.from,
      { promptId, by: "bootstrap", source: "web" },
      "matched although pi appended a note",
    );
    const sha = await sha256(wide);
    assert.deepEqual(message.images, [
      { type: "image", mimeType: "image/png", sha256: sha, bytes: wide.length, source: "web" },
    ]);
    const img = await d.api(`/api/sessions/${id}/images/${sha}`);
    assert.deepEqual(new Uint8Array(await img.arrayBuffer()), wide, "the original, as the browser sent it");
    await pi.stop();
    await llm.close();
  });
}
