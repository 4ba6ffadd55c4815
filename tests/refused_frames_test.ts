import assert from "node:assert/strict";
import { waitFor } from "../testing/daemon.ts";
import { startInProcess } from "../testing/inproc.ts";
import { connectAgent, connectBrowser, userEnd } from "../testing/agent.ts";
import { ERROR_FRAMES_PER_SECOND } from "../lib/error_budget.ts";
import { CloseCode } from "../lib/wire.ts";

const storedSeqs = async (d: { api(path: string): Promise<Response> }, id: string) =>
  ((await (await d.api(`/api/sessions/${id}/events`)).json()) as { seq: number }[]).map((e) => e.seq);

Deno.test("refused frames: past the budget a plugin socket is closed, and what it had in flight is not read", async () => {
  await using d = await startInProcess();
  const bystander = await connectAgent(d, { sessionId: "bystander" });
  // One refusal past the budget closes the socket, saying why.
  const over = await connectAgent(d, { sessionId: "over" });
  for (let i = 0; i <= ERROR_FRAMES_PER_SECOND; i++) over.sendRaw("not json at all");
  await waitFor(() => over.socket.readyState === WebSocket.CLOSED, "the socket closed by the daemon");
  const closed = await over.closed;
  assert.equal(closed.code, CloseCode.policy);
  assert.equal(closed.reason, "too many refused frames");
  assert.equal(over.frames.filter((f) => f.type === "error").length, ERROR_FRAMES_PER_SECOND);

  // A flood in one burst, then an event: the budget's worth of answers, then the socket is shut (reset, since
  // the peer is still writing), and the event behind the flood is neither read nor acked: the plugin's replay
  // brings it back.
  const a = await connectAgent(d, { sessionId: "flooder" });
  for (let i = 0; i < 200; i++) a.sendRaw("not json at all");
  const late = a.send("message_end", userEnd("late", "sent behind the flood"));
  await waitFor(() => a.socket.readyState === WebSocket.CLOSED, "the flooding socket closed");
  const errors = a.frames.filter((f) => f.type === "error");
  assert.equal(errors.length, ERROR_FRAMES_PER_SECOND);
  assert.ok(errors.every((f) => f.code === "bad_json"));
  assert.ok(!a.frames.some((f) => f.type === "ack"), "nothing was acked");
  assert.deepEqual(await storedSeqs(d, "flooder"), []);

  // Another session is unaffected, and the flooder's replay after it reconnects is stored.
  const seq = bystander.send("message_end", userEnd("b", "still here"));
  await bystander.waitFrame((f) => f.type === "ack" && f.lastSeq === seq, "the bystander's ack");
  const again = await connectAgent(d, { sessionId: "flooder", nextSeq: late });
  again.send("message_end", userEnd("late", "sent behind the flood"));
  await again.waitFrame((f) => f.type === "ack" && f.lastSeq === late, "the replay's ack");
  assert.deepEqual(await storedSeqs(d, "flooder"), [late]);
  await again.close();
  await bystander.close();
});

Deno.test("refused frames: bad events in a batch are answered within the budget but never close the socket", async () => {
  await using d = await startInProcess();
  const a = await connectAgent(d, { sessionId: "batcher" });
  // 100 events the schema refuses (no message), then 5 good ones: a replay the plugin would only send again.
  const events = [
    ...Array.from(
      { length: 100 },
      (_, i) => ({ v: 1, sessionId: "batcher", seq: i + 1, ts: 1, type: "message_end" }),
    ),
    ...Array.from({ length: 5 }, (_, i) => ({
      v: 1,
      sessionId: "batcher",
      seq: 101 + i,
      ts: 1,
      type: "message_end",
      ...userEnd(`m${i}`, "fine"),
    })),
  ];
  a.sendRaw(JSON.stringify({ v: 1, type: "batch", sessionId: "batcher", seq: 0, ts: 1, events }));
  await a.waitFrame((f) => f.type === "ack" && f.lastSeq === 105, "the ack of the good events");
  assert.deepEqual(await storedSeqs(d, "batcher"), [101, 102, 103, 104, 105]);
  assert.equal(a.frames.filter((f) => f.type === "error").length, ERROR_FRAMES_PER_SECOND);
  assert.equal(a.socket.readyState, WebSocket.OPEN);
  await a.close();
});

Deno.test("refused frames: past the budget a browser socket is closed too; other browsers carry on", async () => {
  await using d = await startInProcess();
  const bad = await connectBrowser(d.browserUrl);
  const good = await connectBrowser(d.browserUrl);
  for (let i = 0; i <= ERROR_FRAMES_PER_SECOND; i++) bad.send({ type: "nope" });
  await waitFor(() => bad.socket.readyState === WebSocket.CLOSED, "the browser socket closed by the daemon");
  const closed = await bad.closed;
  assert.equal(closed.code, CloseCode.policy);
  assert.equal(bad.frames.filter((f) => f.type === "error").length, ERROR_FRAMES_PER_SECOND);
  good.send({ type: "ping" });
  await good.waitFrame((f) => f.type === "pong", "pong");
  await waitFor(() => good.socket.readyState === WebSocket.OPEN, "the other browser open");
  await good.close();
});
