import assert from "node:assert/strict";
import { Store } from "./store.ts";
import { Hub, type Subscriber } from "./hub.ts";
import { Ingest } from "./ingest.ts";
import { type PluginLink, Sessions } from "./sessions.ts";
import type { AgentEvent, ServerFrame, SessionInfo } from "./protocol.ts";
import { applyEvent, LINE_INTERVAL_MS, liveGlance, settled } from "./session_glance.ts";
import { sessionInfo } from "../testing/agent.ts";

const T0 = Date.UTC(2026, 11, 1);
const link: PluginLink = { send() {}, close() {} };
const origin = { ack() {}, fail() {} };

/** A registry over a real SQLite file in `dir`, with a browser recorder on the hub. */
function open(dir: string) {
  const store = new Store(`${dir}/lvmh.db`);
  const hub = new Hub();
  const seen: ServerFrame[] = [];
  const browser: Subscriber = { send: (d) => seen.push(JSON.parse(d)), bufferedAmount: () => 0, close() {} };
  hub.join(browser);
  const ingest = new Ingest(store, hub, (commits) => commits.forEach((c) => sessions.touch(c.sessionId)));
  const sessions = new Sessions(store, ingest, hub, { defaultAsk: [] });
  let seq = store.lastSeq("s");
  const push = (type: string, payload: Record<string, unknown> = {}) =>
    ingest.push({ v: 1, sessionId: "s", seq: ++seq, ts: T0 + seq, type, ...payload } as AgentEvent, origin);
  return { store, hub, ingest, sessions, seen, push };
}

async function withDir(fn: (dir: string) => void | Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-glance-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const msg = (role: string, text: string) => ({
  message: { role, id: `m-${role}-${text.length}`, text, thinking: null, toolCalls: [], toolCallId: null },
});

/** A run: prompt, answer, a bash call, the end with its cost. */
function run(push: ReturnType<typeof open>["push"], prompt: string, cost: number) {
  push("agent_start");
  push("message_end", msg("user", prompt));
  push("message_end", msg("assistant", "Looking.\nI will run the tests."));
  push("tool_execution_start", { toolCallId: "c", toolName: "bash", args: { command: "npm test" } });
  push("tool_execution_end", { toolCallId: "c", toolName: "bash", isError: false, resultPreview: "ok" });
  push("agent_end", { usage: { totalCost: cost } });
}

Deno.test("glance: title from the first prompt, the running tool, the streamed line, exact cost", () =>
  withDir((dir) => {
    const r = open(dir);
    try {
      r.sessions.connect({ ...sessionInfo("s"), cwd: "/home/me/app", name: null } as SessionInfo, link);
      assert.equal(r.sessions.get("s")!.title, "app", "the cwd's last folder before any prompt");
      r.push("agent_start");
      r.push(
        "message_end",
        msg("user", "\n  Fix the flaky login test, then tidy up the session list code please\nmore"),
      );
      r.push("tool_execution_start", {
        toolCallId: "c",
        toolName: "bash",
        args: { command: "npm test\n-x" },
      });
      r.ingest.flush();
      let s = r.sessions.get("s")!;
      assert.equal(s.title, "Fix the flaky login test, then tidy up the session list…");
      assert.deepEqual(s.activity, { state: "running", tool: "bash npm test" });
      r.push("tool_execution_end", { toolCallId: "c", toolName: "bash", isError: false, resultPreview: "" });
      r.push("message_start", { message: { role: "assistant", id: "a1" } });
      r.push("message_update", { delta: "thinking hard", kind: "thinking" });
      r.push("message_update", { delta: "All green.\nNow the " });
      r.push("message_update", { delta: "list" });
      r.ingest.flush();
      s = r.sessions.get("s")!;
      assert.deepEqual(s.activity, { state: "running", line: "Now the list" }, "thinking is not shown");
      assert.equal(s.lastActivityAt, T0 + 8, "a delta is activity");
      r.push("message_end", msg("assistant", "All green.\nNow the list is fast."));
      r.push("agent_end", { usage: { totalCost: 0.25 } });
      r.ingest.flush();
      s = r.sessions.get("s")!;
      assert.deepEqual(s.activity, { state: "idle", line: "Now the list is fast." });
      assert.equal(s.cost, 0.25);
      r.sessions.closeAll(1001, "over");
      s = r.sessions.get("s")!;
      assert.deepEqual(s.activity, { state: "offline", line: "Now the list is fast." });
    } finally {
      r.store.close();
    }
  }));

Deno.test("glance: a call waiting for a person is the row's tool until it is resolved", () =>
  withDir((dir) => {
    const r = open(dir);
    try {
      r.sessions.connect({ ...sessionInfo("s"), name: null } as SessionInfo, link);
      r.sessions.setWaiting(() => 1);
      r.push("agent_start");
      r.push("approval_request", {
        approvalId: "p1",
        toolCallId: "c",
        toolName: "bash",
        args: { command: "rm -rf x" },
      });
      r.ingest.flush();
      assert.deepEqual(r.sessions.get("s")!.activity, { state: "waiting", tool: "bash rm -rf x" });
      r.push("approval_resolved", { approvalId: "p1", decision: "reject", by: "me", source: "web" });
      r.ingest.flush();
      r.sessions.setWaiting(() => 0);
      assert.deepEqual(r.sessions.get("s")!.activity, { state: "running" });
      r.sessions.closeAll(1001, "over");
    } finally {
      r.store.close();
    }
  }));

Deno.test("glance: figures survive a kill before their write, and an older file is backfilled", () =>
  withDir((dir) => {
    let before;
    {
      const r = open(dir);
      r.sessions.connect({ ...sessionInfo("s"), name: null } as SessionInfo, link);
      // More runs than one catch-up page, with costs whose float sum depends on the order of addition.
      for (let i = 0; i < 1200; i++) run(r.push, `prompt ${i}`, 0.1 + i * 1e-7);
      r.ingest.flush();
      before = r.sessions.get("s")!;
      // Like a SIGKILL: the events are committed, the glance row of this tick is never written.
      r.store.close();
    }
    const expected = Array.from({ length: 1200 }, (_, i) => 0.1 + i * 1e-7).reduce((a, b) => a + b, 0);
    assert.equal(before.cost, expected);
    {
      const r = open(dir);
      const after = r.sessions.get("s")!;
      assert.equal(after.cost, before.cost, "exact after the restart");
      assert.equal(after.title, "prompt 0");
      assert.deepEqual(after.activity, { state: "offline", line: "I will run the tests." });
      assert.equal(after.lastActivityAt, before.lastActivityAt);
      r.sessions.closeAll(1001, "over");
      // A file from before the table: the glance is built from the events at start.
      r.store.db.exec("DROP TABLE session_glance");
      r.store.close();
    }
    {
      const r = open(dir);
      assert.equal(r.sessions.get("s")!.cost, before.cost, "backfilled");
      assert.equal(r.sessions.get("s")!.title, "prompt 0");
      r.sessions.remove("s");
      assert.equal(
        (r.store.db.prepare("SELECT count(*) AS n FROM session_glance").get() as { n: number }).n,
        0,
        "a deleted session's glance is deleted",
      );
      r.store.close();
    }
  }));

Deno.test("glance: streaming deltas cost at most one session_update per line interval", () =>
  withDir(async (dir) => {
    const r = open(dir);
    try {
      r.sessions.connect({ ...sessionInfo("s"), name: null } as SessionInfo, link);
      r.push("agent_start");
      r.push("message_start", { message: { role: "assistant", id: "a1" } });
      r.ingest.flush();
      r.seen.length = 0;
      const t0 = performance.now();
      for (let i = 0; i < 400; i++) {
        r.push("message_update", { delta: ` w${i}` });
        if (i % 40 === 0) await new Promise((ok) => setTimeout(ok, 60)); // let ticks pass while streaming
      }
      const streamedMs = performance.now() - t0;
      const deadline = Date.now() + 2000;
      while (!r.sessions.get("s")!.activity.line?.endsWith("w399") && Date.now() < deadline) {
        await new Promise((ok) => setTimeout(ok, 10));
      }
      // The last update of the stream names its last words.
      for (;;) {
        const last = r.seen.filter((f) => f.type === "session_update").at(-1);
        if (last?.type === "session_update" && last.sessions[0]?.activity.line?.endsWith("w399")) break;
        if (Date.now() > deadline) throw new Error("no session_update with the streamed line");
        await new Promise((ok) => setTimeout(ok, 10));
      }
      const updates = r.seen.filter((f) => f.type === "session_update").length;
      assert.ok(
        updates <= Math.ceil(streamedMs / LINE_INTERVAL_MS) + 2,
        `${updates} updates for 400 deltas in ${streamedMs} ms`,
      );
      assert.ok(updates >= 1);
      r.sessions.closeAll(1001, "over");
    } finally {
      r.store.close();
    }
  }));

Deno.test("applyEvent(): stored events apply once, stale deltas not at all", () => {
  const g = liveGlance();
  const e = (seq: number, type: string, extra: Record<string, unknown> = {}) =>
    ({ v: 1, sessionId: "s", seq, ts: seq, type, ...extra }) as AgentEvent;
  assert.equal(applyEvent(g, e(1, "agent_end", { usage: { totalCost: 1 } })), "record");
  assert.equal(applyEvent(g, e(1, "agent_end", { usage: { totalCost: 1 } })), null, "a replay");
  assert.equal(g.record.cost, 1);
  assert.equal(applyEvent(g, e(0, "message_update", { delta: "old" })), null);
  assert.equal(applyEvent(g, e(2, "message_update", { delta: "new" })), "line");
  assert.equal(applyEvent(g, e(3, "message_update", { delta: "" })), null, "the same line");
  assert.equal(applyEvent(g, e(4, "agent_end", { usage: { totalCost: "x" } })), "record");
  assert.equal(g.record.cost, 1, "a cost that is not a number counts nothing");
});

Deno.test("applyEvent(): the shown line is made when read, from the newest answer that has one", () => {
  const g = liveGlance();
  const answer = (seq: number, text: string) =>
    ({
      v: 1,
      sessionId: "s",
      seq,
      ts: seq,
      type: "message_end",
      message: { role: "assistant", id: `a${seq}`, text },
    }) as unknown as AgentEvent;
  applyEvent(g, answer(1, "First **answer**."));
  applyEvent(g, answer(2, "Then [the docs](https://example.com)."));
  applyEvent(g, answer(3, "```\n```"));
  assert.equal(settled(g).lastLine, "Then the docs.", "a newer answer without a line keeps the one before");
  assert.deepEqual(g.answers, []);
  for (let i = 0; i < 40; i++) applyEvent(g, answer(10 + i, `answer ${i}`));
  assert.ok(g.answers.length < 16, "a catch-up keeps a bounded number of answers unread");
  assert.equal(settled(g).lastLine, "answer 39");
});
