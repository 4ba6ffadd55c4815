/**
 * Fixtures of the render benches (bench/render.ts, render_list.ts, ui_history.ts): realistic runs of events (prompt,
 * answer with code, a bash call with output, a closing answer, cost) written straight into a real SQLite store.
 */
import type { Store } from "../lib/store.ts";
import type { AgentEvent, SessionInfo } from "../lib/protocol.ts";
import { eventFrame } from "./agent.ts";
import type { InProcessDaemon } from "./inproc.ts";

/** Events of one run of a session, from `start`; ten events. */
export function* runEvents(sessionId: string, start: number, t0: number): Generator<AgentEvent> {
  let seq = start;
  const ev = (type: string, payload: Record<string, unknown>) => {
    const s = seq++;
    return eventFrame(sessionId, s, type, payload, t0 + seq * 1000) as AgentEvent;
  };
  const msg = (role: string, text: string, extra: Record<string, unknown> = {}) =>
    ev("message_end", {
      message: { role, id: `m${seq}`, text, thinking: null, toolCalls: [], toolCallId: null, ...extra },
    });
  yield ev("agent_start", {});
  yield msg("user", `Please look at module ${seq} and fix the failing test.`);
  yield ev("message_start", { message: { role: "assistant", id: `m${seq}` } });
  yield msg(
    "assistant",
    "I'll **read** the file first, then run the tests.\n\n```ts\nconst x = await load(path);\n```\n\n- one\n- two",
    {
      thinking: "The test fails because of an off-by-one in the loop bound.",
      toolCalls: [{
        id: `c${seq}`,
        name: "bash",
        argsJson: JSON.stringify({ command: "deno test -A lib/" }),
      }],
    },
  );
  const call = `c${seq - 1}`;
  yield ev("tool_execution_start", {
    toolCallId: call,
    toolName: "bash",
    args: { command: "deno test -A lib/" },
  });
  yield ev("tool_execution_update", { toolCallId: call, toolName: "bash", partial: "running 12 tests" });
  yield ev("tool_execution_end", {
    toolCallId: call,
    toolName: "bash",
    isError: false,
    resultPreview: "ok | 12 passed | 0 failed\n".repeat(20),
  });
  yield msg("toolResult", "ok | 12 passed | 0 failed\n".repeat(40), { toolCallId: call });
  yield msg("assistant", "All **12** tests pass now. The fix was a loop bound; see `lib/x.ts` line 42.");
  yield ev("agent_end", { usage: { inputTokens: 5230, outputTokens: 410, totalCost: 0.0071 } });
}

/** The models a modest pi set-up reports in its snapshot (pi lists every model it knows, with or without a key). */
const MODELS = Array.from({ length: 12 }, (_, i) => ({
  provider: i < 6 ? "anthropic" : "openai",
  id: `model-${i}-2025-06-01`,
  name: `Model ${i}`,
  input: i % 2 ? ["text"] : ["text", "image"],
  hasAuth: i < 6,
}));

/** A session's snapshot as a plugin's hello carries it. */
export function benchInfo(id: string, i: number, t0: number): SessionInfo {
  return {
    id,
    name: i % 4 === 0 ? `named session ${i}` : null,
    cwd: `/home/dev/src/project-${i}`,
    model: "claude-sonnet",
    provider: "anthropic",
    agent: i % 2 === 0,
    repo: i % 3 === 0 ? `group/repo-${i}` : null,
    startedAt: t0 + i * 1000,
    models: MODELS,
    thinkingLevel: "medium",
  } as SessionInfo;
}

/** Store `events` events (whole runs, the last one cut) for one session. */
export function fillHistory(store: Store, id: string, events: number, t0: number): void {
  let batch: AgentEvent[] = [];
  for (let seq = store.lastSeq(id) + 1; seq <= events; seq += 10) {
    for (const e of runEvents(id, seq, t0)) if (e.seq <= events) batch.push(e);
    if (batch.length >= 2000) (store.appendBatch(batch), batch = []);
  }
  if (batch.length) store.appendBatch(batch);
}

/** `count` sessions named `bench-<i>`, each with `runs` runs. */
export function fillSessions(store: Store, count: number, runs: number, t0: number): string[] {
  const ids: string[] = [];
  let batch: AgentEvent[] = [];
  for (let i = 0; i < count; i++) {
    const id = `bench-${i}`;
    ids.push(id);
    store.upsertSession(benchInfo(id, i, t0));
    for (let r = 0; r < runs; r++) batch.push(...runEvents(id, r * 10 + 1, t0 + i * 60_000));
    if (batch.length >= 5000) (store.appendBatch(batch), batch = []);
  }
  if (batch.length) store.appendBatch(batch);
  return ids;
}

/**
 * A `GET` of a page as a viewer (a named viewer token, made through the REST route), straight to the
 * in-process daemon's handler: the page route end to end, with the router and the credential check in front.
 */
export async function viewerPages(d: InProcessDaemon): Promise<(path: string) => Promise<Response>> {
  const res = await d.api("/api/tokens", {
    method: "POST",
    body: JSON.stringify({ name: "bench-viewer", role: "viewer" }),
  });
  if (res.status !== 201) throw new Error(`cannot make a viewer token: ${res.status} ${await res.text()}`);
  const { token } = await res.json() as { token: string };
  return (path) => d.fetch(path, { headers: { authorization: `Bearer ${token}` } });
}

/** Run `path` in its own Deno with a throwaway copy of deno.lock (playwright-core must stay out of the lock). */
export async function runWithThrowawayLock(path: string, args: string[]): Promise<number> {
  const root = new URL("../", import.meta.url).pathname;
  const lock = await Deno.makeTempFile({ prefix: "lvmh-bench-lock-", suffix: ".json" });
  try {
    await Deno.copyFile(`${root}deno.lock`, lock);
    const { code } = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", `--lock=${lock}`, path, ...args],
      cwd: root,
      stdout: "inherit",
      stderr: "inherit",
    }).output();
    return code;
  } finally {
    await Deno.remove(lock).catch(() => {});
  }
}
