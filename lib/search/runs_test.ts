import assert from "node:assert/strict";
import type { EventRow } from "../event_codec.ts";
import { sessionRuns } from "./runs.ts";

let seq = 0;
const row = (type: string, payload: Record<string, unknown> = {}): EventRow => {
  seq++;
  return { sessionId: "s", seq, ts: 1000 * seq, type, payload: JSON.stringify(payload) };
};
const user = (text: string, from?: Record<string, unknown>) =>
  row("message_end", { message: { role: "user", id: `u${seq}`, text }, ...(from ? { from } : {}) });
const assistant = (stopReason: string, errorMessage?: string) =>
  row("message_end", { message: { role: "assistant", id: `a${seq}`, text: "ok", stopReason, errorMessage } });
const end = (inputTokens: number, outputTokens: number, totalCost: number) =>
  row("agent_end", { usage: { inputTokens, outputTokens, totalCost } });

Deno.test("sessionRuns() derives runs: done, aborted, failed, hook, web and CLI prompts, a steer mid-run", () => {
  seq = 0;
  const log: EventRow[] = [
    // A terminal prompt, a tool call asked for and rejected, then done.
    row("agent_start"),
    user("fix the tests"),
    assistant("toolUse"),
    row("tool_execution_start", { toolCallId: "t1", toolName: "bash", args: {} }),
    row("approval_request", { approvalId: "p1", toolCallId: "t1", toolName: "bash", args: {} }),
    row("approval_resolved", { approvalId: "p1", decision: "reject", by: "ada", source: "web" }),
    row("tool_execution_start", { toolCallId: "t2", toolName: "read", args: {} }),
    row("tool_execution_start", { toolCallId: "t3", toolName: "bash", args: {} }),
    // A steer from the web arrives mid-run: the run keeps its first prompt.
    user("also the lint", { promptId: "p-2", by: "ada" }),
    assistant("stop"),
    end(100, 20, 0.01),
    row("agent_settled"),
    // A web prompt, aborted.
    user("refactor everything", { promptId: "p-3", by: "ada" }),
    row("agent_start"),
    assistant("aborted"),
    end(5, 1, 0.001),
    // A hook's prompt, failed.
    row("agent_start"),
    user("pipeline failed", { promptId: "p-4", by: "hook:gitlab" }),
    assistant("error", "rate limited"),
    end(7, 0, 0),
    // Still running, from lvmh's CLI.
    row("agent_start"),
    user("one more", { promptId: "p-5", by: "ada", source: "cli" }),
  ];
  const pages = (after: number) => log.filter((r) => r.seq > after).slice(0, 5);
  const runs = sessionRuns(pages, { limit: 100 });
  assert.deepEqual(
    runs.map((r) => [r.startSeq, r.state, r.prompt?.source, r.prompt?.by ?? null, r.prompt?.text]),
    [
      [21, "running", "cli", "ada", "one more"],
      [17, "failed", "hook", "hook:gitlab", "pipeline failed"],
      [14, "aborted", "web", "ada", "refactor everything"],
      [1, "done", "terminal", null, "fix the tests"],
    ],
  );
  const first = runs[3];
  assert.deepEqual(first.tools, { bash: 2, read: 1 });
  assert.deepEqual(first.approvals, { asked: 1, rejected: 1 });
  assert.deepEqual(first.usage, { inputTokens: 100, outputTokens: 20, totalCost: 0.01 });
  assert.deepEqual([first.endSeq, first.startedAt, first.endedAt], [11, 1000, 11_000]);
  assert.equal(runs[1].error, "rate limited");
  assert.equal(runs[0].endSeq, null);
  assert.deepEqual(sessionRuns(pages, { limit: 2, before: 17 }).map((r) => r.startSeq), [14, 1]);
});
