import assert from "node:assert/strict";
import type { UiEvent } from "./types.ts";
import {
  applyEvents,
  buildConversation,
  emptyConversation,
  mergeEvents,
  prependEvents,
  streamingText,
  streamingThinking,
} from "./conversation.ts";

const S = "s1";
/** An event as the daemon serves it (tests write payloads loosely; the daemon parsed the real ones). */
function ev(seq: number, type: string, payload: Record<string, unknown> = {}): UiEvent {
  return { sessionId: S, seq, ts: 1000 + seq, type, ...payload } as unknown as UiEvent;
}
function msg(seq: number, role: string, id: string, text: string, extra: Record<string, unknown> = {}) {
  return ev(seq, "message_end", {
    message: { role, id, text, thinking: null, toolCalls: [], toolCallId: null, ...extra },
  });
}

/** A short run: prompt, assistant calls a tool, result, final answer, usage. */
function run(): UiEvent[] {
  return [
    ev(1, "agent_start"),
    msg(2, "user", "u1", "list files"),
    ev(3, "message_start", { message: { role: "assistant", id: "a1" } }),
    msg(5, "assistant", "a1", "Let me look.", {
      thinking: "user wants ls",
      toolCalls: [{ id: "c1", name: "bash", argsJson: '{"command":"ls"}' }],
    }),
    ev(6, "tool_execution_start", { toolCallId: "c1", toolName: "bash", args: { command: "ls" } }),
    ev(7, "tool_execution_update", { toolCallId: "c1", toolName: "bash", partial: "a.txt" }),
    ev(8, "tool_execution_end", {
      toolCallId: "c1",
      toolName: "bash",
      isError: false,
      resultPreview: "a.txt\nb.txt",
    }),
    msg(9, "toolResult", "r1", "a.txt\nb.txt", { toolCallId: "c1" }),
    msg(10, "assistant", "a2", "Two files."),
    ev(11, "agent_end", { usage: { inputTokens: 100, outputTokens: 20, totalCost: 0.01 } }),
    ev(12, "agent_settled"),
  ];
}

Deno.test("buildConversation() rebuilds messages, tool cards and usage from message_end events", () => {
  const c = buildConversation(run());
  assert.deepEqual(c.items.map((i) => i.kind), ["user", "assistant", "assistant", "run"]);
  const a1 = c.items[1];
  assert.equal(a1.kind, "assistant");
  if (a1.kind !== "assistant") return;
  assert.equal(a1.thinking, "user wants ls");
  assert.deepEqual(a1.toolCalls, ["c1"]);
  const t = c.tools.c1;
  assert.equal(t.status, "done");
  assert.equal(t.argsJson, '{"command":"ls"}');
  assert.equal(t.resultPreview, "a.txt\nb.txt");
  assert.equal(t.resultText, "a.txt\nb.txt");
  assert.equal(c.running, false);
  assert.deepEqual(c.totals, { inputTokens: 100, outputTokens: 20, totalCost: 0.01 });
  assert.equal(c.firstSeq, 1);
  assert.equal(c.lastSeq, 12);
  assert.equal(c.streaming, null);
});

Deno.test("applyEvents() ignores replayed events so a reconnect causes no duplicates", () => {
  const events = run();
  const c1 = applyEvents(emptyConversation(), events.slice(0, 6));
  const c2 = applyEvents(c1, events.slice(3)); // overlaps 4..6
  const c3 = applyEvents(c2, events); // full replay
  assert.deepEqual(c3.items, buildConversation(events).items);
  assert.equal(c3.events.length, events.length);
});

Deno.test("applyEvents() does not mutate its input", () => {
  const c1 = buildConversation(run().slice(0, 4));
  const before = JSON.stringify(c1);
  applyEvents(c1, run().slice(4));
  assert.equal(JSON.stringify(c1), before);
});

Deno.test("applyEvents() streams deltas and ends the stream on message_end", () => {
  let c = buildConversation(run().slice(0, 2));
  c = applyEvents(c, [ev(3, "message_start", { message: { role: "assistant", id: "a1" } })]);
  assert.deepEqual(c.streaming, { messageId: "a1", parts: [] });
  c = applyEvents(c, [ev(4, "message_update", { delta: "Let " })]);
  c = applyEvents(c, [ev(5, "message_update", { delta: "me" })]);
  assert.equal(streamingText(c.streaming), "Let me");
  assert.equal(c.lastSeq, 3, "deltas do not move lastSeq: they are not persisted");
  c = applyEvents(c, [msg(6, "assistant", "a1", "Let me look.")]);
  assert.equal(c.streaming, null);
  assert.equal(c.items.at(-1)?.kind, "assistant");
});

Deno.test("applyEvents() keeps reasoning deltas apart from the answer text", () => {
  let c = buildConversation(run().slice(0, 2));
  c = applyEvents(c, [ev(3, "message_start", { message: { role: "assistant", id: "a1" } })]);
  c = applyEvents(c, [ev(4, "message_update", { delta: "hmm, ", kind: "thinking" })]);
  c = applyEvents(c, [ev(5, "message_update", { delta: "Answer", kind: "text" })]);
  c = applyEvents(c, [ev(6, "message_update", { delta: "ok", kind: "thinking" })]);
  c = applyEvents(c, [ev(7, "message_update", { delta: "!" })]); // no kind: answer text (older plugins)
  assert.equal(streamingText(c.streaming), "Answer!");
  assert.equal(streamingThinking(c.streaming), "hmm, ok");
});

Deno.test("applyEvents() keeps deltas that overtook their message_start, ignores stale ones", () => {
  let c = buildConversation(run().slice(0, 2));
  c = applyEvents(c, [ev(4, "message_update", { delta: "Hi" })]);
  c = applyEvents(c, [ev(3, "message_start", { message: { role: "assistant", id: "a1" } })]);
  assert.equal(c.streaming?.messageId, "a1");
  assert.equal(streamingText(c.streaming), "Hi");
  c = applyEvents(c, [msg(6, "assistant", "a1", "Hi there")]);
  c = applyEvents(c, [ev(5, "message_update", { delta: " there" })]);
  assert.equal(c.streaming, null, "a delta older than the persisted message_end is dropped");
});

Deno.test("applyEvents() does not let an earlier message_end end a newer stream", () => {
  let c = buildConversation(run().slice(0, 2));
  c = applyEvents(c, [ev(3, "message_start", { message: { role: "assistant", id: "a1" } })]);
  c = applyEvents(c, [ev(4, "message_update", { delta: "first" })]);
  c = applyEvents(c, [ev(8, "message_update", { delta: "second" })]);
  c = applyEvents(c, [msg(5, "assistant", "a1", "first")]);
  assert.equal(streamingText(c.streaming), "second");
  c = applyEvents(c, [ev(6, "message_start", { message: { role: "assistant", id: "a2" } })]);
  assert.equal(c.streaming?.messageId, "a2");
  assert.equal(streamingText(c.streaming), "second");
});

Deno.test("prependEvents() adds an older page and rebuilds tool links across the page boundary", () => {
  const events = run();
  let c = buildConversation(events.slice(6)); // from seq 7: result without its call
  assert.ok(c.items.some((i) => i.kind === "toolResult"), "orphan result shown alone");
  c = prependEvents(c, events.slice(0, 6));
  assert.deepEqual(c.items, buildConversation(events).items);
  assert.equal(c.firstSeq, 1);
  assert.equal(prependEvents(c, events.slice(0, 3)), c, "nothing older: same object");
});

Deno.test("buildConversation() marks failed tools and notes bye and buffer_overflow", () => {
  const c = buildConversation([
    msg(1, "assistant", "a", "", { toolCalls: [{ id: "x", name: "mystery", argsJson: "{}" }] }),
    ev(2, "tool_execution_end", {
      toolCallId: "x",
      toolName: "mystery",
      isError: true,
      resultPreview: "boom",
    }),
    ev(3, "buffer_overflow", { dropped: 7 }),
    ev(4, "bye", { reason: "shutdown" }),
  ]);
  assert.equal(c.tools.x.status, "error");
  assert.equal(c.tools.x.resultPreview, "boom");
  const notices = c.items.filter((i) => i.kind === "notice").map((i) => i.kind === "notice" && i.text);
  assert.equal(notices.length, 2);
  assert.match(String(notices[0]), /dropped 7 events/);
});

Deno.test("buildConversation() shows a session_notice as a notice line in its place", () => {
  const text =
    "pi had not saved this conversation yet: the agent starts this resumed session without its earlier context";
  const c = buildConversation([
    msg(1, "user", "u1", "hello"),
    ev(2, "session_notice", { kind: "not_saved", text }),
    msg(3, "user", "u2", "again"),
  ]);
  const kinds = c.items.map((i) => i.kind);
  const at = c.items.findIndex((i) => i.kind === "notice");
  assert.ok(at > 0 && at < kinds.length - 1, `the notice sits between the two messages: ${kinds}`);
  const notice = c.items[at];
  assert.equal(notice.kind === "notice" && notice.text, text);
  assert.equal(notice.seq, 2);
});

Deno.test("mergeEvents() fills a gap behind newer events without duplicates", () => {
  const events = run();
  let c = buildConversation(events.slice(0, 3));
  c = applyEvents(c, events.slice(8)); // seq 10..12 arrive; 4..9 missing
  assert.equal(c.lastSeq, 12);
  const filled = mergeEvents(c, events.slice(2)); // refetch from seq 3: overlaps both sides
  assert.deepEqual(filled.items, buildConversation(events).items);
  assert.equal(filled.events.length, events.length);
  assert.equal(mergeEvents(filled, events), filled, "nothing new: same object");
});

Deno.test("applyEvents() ends a stream whose run ended without a message_end (abort)", () => {
  let c = buildConversation([ev(1, "agent_start")]);
  c = applyEvents(c, [ev(2, "message_start", { message: { role: "assistant", id: "a" } })]);
  c = applyEvents(c, [ev(3, "message_update", { delta: "half a sent" })]);
  assert.equal(streamingText(c.streaming), "half a sent");
  c = applyEvents(c, [ev(4, "agent_end", { usage: {} })]);
  assert.equal(c.streaming, null);
});

Deno.test("a run that ends before its tools report marks them stopped, and only those", () => {
  const call = (id: string) => ({ id, name: "bash", argsJson: "{}" });
  const events = [
    ...run(),
    ev(13, "agent_start"),
    msg(14, "assistant", "a3", "Two calls.", { toolCalls: [call("c2"), call("c3")] }),
    ev(15, "tool_execution_start", { toolCallId: "c2", toolName: "bash", args: {} }),
    ev(16, "agent_end", { usage: {} }), // aborted: c2 was running, c3 never started
  ];
  const c = buildConversation(events);
  assert.deepEqual(
    ["c1", "c2", "c3"].map((id) => c.tools[id].status),
    ["done", "stopped", "stopped"],
  );
  const live = applyEvents(buildConversation(events.slice(0, -1)), events.slice(-1));
  assert.deepEqual(live.tools, c.tools, "the same live as rebuilt");
  const gone = buildConversation([...events.slice(0, -1), ev(16, "bye", { reason: "shutdown" })]);
  assert.equal(gone.tools.c2.status, "stopped", "a session that went away ends its calls too");
});

Deno.test("approval events: the call awaits, then runs once approved or stays rejected", () => {
  const asked = [
    ev(1, "agent_start"),
    msg(2, "assistant", "a1", "", {
      toolCalls: [
        { id: "c1", name: "bash", argsJson: '{"command":"ls"}' },
        { id: "c2", name: "bash", argsJson: '{"command":"rm -rf /"}' },
      ],
    }),
    ev(3, "approval_request", {
      approvalId: "ap1",
      toolCallId: "c1",
      toolName: "bash",
      args: { command: "ls" },
    }),
    ev(4, "tool_execution_start", { toolCallId: "c1", toolName: "bash", args: { command: "ls" } }),
  ];
  let c = buildConversation(asked);
  assert.equal(c.tools.c1.status, "awaiting", "a start while waiting does not read as running");
  assert.equal(c.tools.c1.approvalId, "ap1");
  assert.deepEqual(c.approvalOrder, ["ap1"]);
  assert.equal(c.approvals.ap1.resolved, null);

  c = applyEvents(c, [
    ev(5, "approval_resolved", { approvalId: "ap1", decision: "approve", by: "admin", source: "web" }),
  ]);
  assert.equal(c.tools.c1.status, "running");
  assert.equal(c.approvals.ap1.resolved?.source, "web");
  c = applyEvents(c, [
    ev(6, "tool_execution_end", { toolCallId: "c1", toolName: "bash", isError: false, resultPreview: "a" }),
    ev(7, "approval_request", { approvalId: "ap2", toolCallId: "c2", toolName: "bash", args: {} }),
    ev(8, "approval_resolved", { approvalId: "ap2", decision: "reject", by: "admin", source: "web" }),
    msg(9, "toolResult", "r2", "Rejected by admin", { toolCallId: "c2", isError: true }),
  ]);
  assert.equal(c.tools.c1.status, "done");
  assert.equal(c.tools.c2.status, "rejected", "the result of a rejected call keeps it rejected");
  assert.equal(c.tools.c2.resultText, "Rejected by admin");

  // A run that ends while a call waits (abort, crash): the call is stopped, not waiting forever.
  const aborted = buildConversation([...asked, ev(5, "agent_end", { usage: {} })]);
  assert.equal(aborted.tools.c1.status, "stopped");
});

Deno.test("command_result answers are kept by commandId, also through a rebuild from older pages", () => {
  const conv = buildConversation([
    ev(5, "command_result", { commandId: "c1", ok: true }),
    ev(6, "command_result", { commandId: "c2", ok: false, error: "refused: no API key" }),
  ]);
  assert.deepEqual(conv.commands, {
    c1: { ok: true, error: null },
    c2: { ok: false, error: "refused: no API key" },
  });
  assert.equal(conv.items.length, 0, "not shown in the conversation itself");
  const older = prependEvents(conv, [ev(1, "command_result", { commandId: "c0", ok: false })]);
  assert.deepEqual(Object.keys(older.commands).sort(), ["c0", "c1", "c2"]);
  assert.equal(older.commands.c0.error, "refused", "a refusal without a reason still reads as one");
});

Deno.test("conversation: a web prompt's user message says who sent it and links its images; terminal ones are named", () => {
  const sha = "a".repeat(64), other = "b".repeat(64);
  const c = buildConversation([
    ev(1, "message_start", { message: { role: "user", id: "u1" }, from: { promptId: "p1", by: "alice" } }),
    ev(2, "message_end", {
      message: {
        role: "user",
        id: "u1",
        text: "what is this?",
        thinking: null,
        toolCalls: [],
        toolCallId: null,
        images: [{ type: "image", mimeType: "image/png", sha256: sha, bytes: 123_456, source: "web" }],
      },
      from: { promptId: "p1", by: "alice" },
    }),
    msg(3, "user", "u2", "typed", {
      images: [{ type: "image", mimeType: "image/jpeg", sha256: other, bytes: 900, source: "terminal" }],
    }),
    ev(4, "message_end", {
      message: {
        role: "user",
        id: "u3",
        text: "old daemon",
        thinking: null,
        toolCalls: [],
        toolCallId: null,
      },
      from: { promptId: "p3" },
    }),
  ]);
  const users = c.items.filter((i) => i.kind === "user");
  assert.equal(users.length, 3);
  const [web, typed, anonymous] = users.map((u) => u.kind === "user" ? u : null);
  assert.deepEqual(web?.web, { by: "alice" });
  assert.deepEqual(web?.images, [{
    sha256: sha,
    mimeType: "image/png",
    bytes: 123_456,
    src: `/api/sessions/${S}/images/${sha}`,
  }]);
  assert.equal(typed?.web, null, "typed in the terminal");
  assert.equal(typed?.images[0].src, null, "the daemon never had it");
  assert.deepEqual(anonymous?.web, { by: null }, "a prompt frame without by");
  assert.deepEqual(anonymous?.images, []);
});

Deno.test("applyEvents() keeps the models of the latest session_info (the session list leaves them out)", () => {
  const m = (id: string) => ({ provider: "p", id, name: id, input: ["text"], hasAuth: true });
  assert.equal(buildConversation(run()).models, null);
  const conv = buildConversation([
    ev(1, "session_info", { session: { id: S, models: [m("a")] } }),
    ev(2, "session_info", { session: { id: S, name: "renamed" } }),
    ev(3, "session_info", { session: { id: S, models: [m("b"), m("c")] } }),
  ]);
  assert.deepEqual(conv.models?.map((x) => x.id), ["b", "c"]);
});
