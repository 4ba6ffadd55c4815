import assert from "node:assert/strict";
import { type CliEvent, createRenderer } from "./render.ts";

/** An event with the envelope filled in; the fields a test leaves out are not read by the renderer. */
const ev = (type: string, fields: Record<string, unknown> = {}, seq = 1): CliEvent =>
  ({ v: 1, sessionId: "s", seq, ts: 0, type, ...fields }) as unknown as CliEvent;
const message = (role: string, text: string) => ({
  message: { role, id: "m", text, thinking: null, toolCalls: [], toolCallId: null },
});

function rendered(events: CliEvent[]): string {
  let out = "";
  const render = createRenderer((s) => out += s);
  for (const e of events) render(e);
  return out;
}

Deno.test("render: streamed text shows as it arrives and its message_end completes it, once", () => {
  assert.equal(
    rendered([
      ev("message_update", { delta: "thinking…", kind: "thinking" }),
      ev("message_update", { delta: "Hel" }),
      ev("message_update", { delta: "lo" }),
      ev("message_end", message("assistant", "Hello there")),
      ev("message_end", message("user", "next")),
    ]),
    "assistant: Hello there\nuser: next\n",
  );
  // A message_end that does not continue the streamed text ends the line and prints the message whole.
  assert.equal(
    rendered([ev("message_update", { delta: "Hi" }), ev("message_end", message("assistant", "Other"))]),
    "assistant: Hi\nassistant: Other\n",
  );
});

Deno.test("render: tool calls, approvals, run and session ends; quiet events print nothing", () => {
  const out = rendered([
    ev("message_start", message("assistant", "")),
    ev("agent_start"),
    ev("tool_execution_start", { toolCallId: "t", toolName: "bash", args: { command: "ls  -l" } }),
    ev("tool_execution_update", { toolCallId: "t", toolName: "bash", partial: "a" }),
    ev("tool_execution_end", { toolCallId: "t", toolName: "bash", isError: false, resultPreview: "a" }),
    ev("message_end", message("toolResult", "a")),
    ev("approval_request", { approvalId: "ap1", toolCallId: "u", toolName: "edit", args: {} }),
    ev("approval_resolved", { approvalId: "ap1", decision: "reject", by: "ann", source: "web" }),
    ev("tool_execution_end", { toolCallId: "u", toolName: "edit", isError: true, resultPreview: "no\nway" }),
    ev("agent_end", { usage: { inputTokens: 10, outputTokens: 2 } }),
    ev("agent_settled"),
    ev("command_result", { commandId: "c", ok: true }),
    ev("session_info", { session: {} }),
    ev("buffer_overflow", { dropped: 3 }),
    ev("bye", { reason: "shutdown" }),
    ev("a_type_from_a_newer_daemon"),
  ]);
  assert.equal(
    out,
    [
      '  > bash {"command":"ls -l"}',
      "  ok bash",
      "  ? edit waits for approval: lvmh approve ap1",
      "  rejected by ann (web)",
      "  x edit: no way",
      "-- run ended (10 in, 2 out) --",
      "!! the plugin lost 3 events",
      "-- session ended: shutdown --",
      "",
    ].join("\n"),
  );
});

Deno.test("render: a session_notice prints its text on a line of its own, after any streamed text", () => {
  assert.equal(
    rendered([
      ev("message_update", { delta: "Hal" }),
      ev("session_notice", { kind: "not_saved", text: "pi had not saved this conversation yet" }),
    ]),
    "assistant: Hal\n!! pi had not saved this conversation yet\n",
  );
});
