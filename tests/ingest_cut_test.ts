/**
 * Events whose payload and JSON are cut from the frame they came in (lib/event_codec.ts `cutFrom`) and events
 * encoded again must come out the same: over REST, to a browser, and as the events the plugin meant (defaults
 * filled in, `ts` in whole milliseconds), whichever way each was laid out.
 */
import assert from "node:assert/strict";
import { startInProcess } from "../testing/inproc.ts";
import { connectAgent, connectBrowser } from "../testing/agent.ts";

const SESSION = "cuts";
const TS = 1_764_000_000_000;
const answer = (id: string, text: string) => ({
  role: "assistant",
  id,
  text,
  thinking: null,
  toolCalls: [{ id: "c1", name: "bash", argsJson: '{"cmd":"ls -la"}' }],
  toolCallId: null,
});
type Sent = Record<string, unknown> & { seq: number; ts: number; type: string };
const ev = (seq: number, type: string, payload: Record<string, unknown>, ts = TS + seq): Sent => ({
  v: 1,
  sessionId: SESSION,
  seq,
  ts,
  type,
  ...payload,
});

Deno.test("ingest: events cut from their frames and events encoded again are stored and served alike", async () => {
  await using d = await startInProcess();
  const a = await connectAgent(d, { sessionId: SESSION });
  const browser = await connectBrowser(d.browserUrl);
  browser.send({ type: "subscribe", sessionId: SESSION, after: 0 });
  await browser.waitFrame((f) => f.type === "session_list");

  // What the plugin sends, and what the log must hold of each.
  const sent = [
    ev(1, "agent_start", {}), // through the schema
    ev(2, "message_end", { message: answer("a1", 'quote " backslash \\ ü 😀 \u2028 end') }), // cut
    ev(3, "message_end", { message: { role: "assistant", id: "a2" } }), // defaults to fill in
    ev(4, "tool_execution_update", { toolCallId: "c1", toolName: "bash", partial: "line\n" }), // cut
    ev(5, "message_end", { message: answer("a3", "fraction") }, TS + 5.75), // stored truncated
    ev(6, "message_update", { delta: "streamed" }), // live only
    ev(7, "message_end", {
      message: answer("a4", "last of the batch"),
      extra: { "9": [1.5e-7, 1e21], z: "" },
    }),
  ];
  const batch = (events: unknown[], space?: number) =>
    JSON.stringify({ v: 1, type: "batch", sessionId: SESSION, seq: 0, ts: TS, events }, null, space);
  a.sendRaw(batch(sent));
  // Laid out otherwise than the plugin does (whitespace): nothing is cut, everything is encoded.
  const spaced = [ev(8, "message_end", { message: answer("a5", "pretty") }), ev(9, "agent_end", {})];
  a.sendRaw(batch(spaced, 2));
  // An event alone in its frame is its own JSON.
  const alone = ev(10, "message_end", { message: answer("a6", "alone") });
  a.sendRaw(JSON.stringify(alone));
  await a.waitFrame((f) => f.type === "ack" && f.lastSeq === 10, "the ack of seq 10");

  const expected = [...sent, ...spaced, alone]
    .filter((e) => e.type !== "message_update")
    .map((e): Sent => ({ ...e, ts: Math.trunc(e.ts) }));
  // The schema's defaults, filled in for the events that went through it.
  expected[2].message = {
    role: "assistant",
    id: "a2",
    text: "",
    thinking: null,
    toolCalls: [],
    toolCallId: null,
  };
  expected[7].usage = {};
  const stored = await (await d.api(`/api/sessions/${SESSION}/events`)).json();
  // As parsed JSON: key order is the schema's for an event encoded again, the plugin's for one cut.
  assert.deepEqual(stored.map(withoutOrder), expected.map(withoutOrder));

  // The browser got the same events, each once (the delta ahead of the stored ones around it: it needs no commit).
  await browser.waitFrame(() => liveEvents(browser.frames).some((e) => e.seq === 10), "the browser's seq 10");
  const live = liveEvents(browser.frames);
  assert.deepEqual(live.map((e) => e.seq).sort((x, y) => x - y), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  assert.deepEqual(
    live.filter((e) => e.type !== "message_update").map(withoutOrder),
    stored.map(withoutOrder),
  );
  assert.equal(live.find((e) => e.seq === 6)?.delta, "streamed");
  await browser.close();
  await a.close();
});

type Event = Record<string, unknown> & { seq: number; type: string };

function liveEvents(frames: Record<string, unknown>[]): Event[] {
  return frames.filter((f) => f.type === "events").flatMap((f) => f.events as Event[]);
}

/** A value with every object's keys sorted, so that deepEqual compares contents only. */
function withoutOrder(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutOrder);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.keys(value).sort().map((k) => [k, withoutOrder((value as Record<string, unknown>)[k])]),
  );
}
