/**
 * The lvmh-agent plugin's cost on pi's event loop: time spent inside its handlers per event (goal: under
 * 50 µs mean), with the real daemon up and with it down. The factory is driven in-process by the fake pi
 * host from testing/pi.ts with a realistic run (prompt, streamed answer, tool call with output, answer);
 * between runs the loop is yielded so the plugin's queued sends happen as they would inside pi.
 * Also printed: this process's CPU time per event over the whole loop, which adds the queued sends
 * (serialisation, socket writes, acks) and the bench's own overhead to the handler time.
 */
import process from "node:process";
import { freePort, startDaemon, waitFor } from "../testing/daemon.ts";
import { fakePi } from "../testing/fake_pi.ts";
import { createLvmhAgent } from "../plugin/lvmh-agent.mjs";

const GOAL_US = 50;
const RUNS = 300;
const DELTAS = 40;

/** One agent run as pi emits it to extensions. */
function runEvents(i: number): [string, Record<string, unknown>][] {
  const t = 1_700_000_000_000 + i * 1000;
  const user = { role: "user", content: [{ type: "text", text: `Please fix test ${i}` }], timestamp: t };
  const usage = { input: 1200, output: 80, cacheRead: 0, cacheWrite: 0, cost: { total: 0.001 } };
  const call = { type: "toolCall", id: `call_${i}`, name: "bash", arguments: { command: "npm test" } };
  const a1 = { role: "assistant", content: [call], usage, stopReason: "toolUse", timestamp: t + 1 };
  const output = "ok 1 - passes\n".repeat(20);
  const result = { content: [{ type: "text", text: output }] };
  const tr = {
    role: "toolResult",
    toolCallId: call.id,
    toolName: "bash",
    content: result.content,
    timestamp: t + 2,
  };
  const words = Array.from({ length: DELTAS }, (_, k) => `word${k} `);
  const a2 = {
    role: "assistant",
    content: [{ type: "text", text: words.join("") }],
    usage,
    timestamp: t + 3,
  };
  return [
    ["input", { text: user.content[0].text, source: "interactive" }],
    ["agent_start", {}],
    ["turn_start", { turnIndex: 0, timestamp: t }],
    ["message_start", { message: user }],
    ["message_end", { message: user }],
    ["message_start", { message: { ...a1, content: [] } }],
    ["message_update", { message: a1, assistantMessageEvent: { type: "toolcall_start", contentIndex: 0 } }],
    ["message_end", { message: a1 }],
    ["tool_execution_start", { toolCallId: call.id, toolName: "bash", args: call.arguments }],
    ...[1, 2, 3].map((k): [string, Record<string, unknown>] => [
      "tool_execution_update",
      {
        toolCallId: call.id,
        toolName: "bash",
        partialResult: { content: [{ type: "text", text: output.slice(0, k * 90) }] },
      },
    ]),
    ["tool_execution_end", { toolCallId: call.id, toolName: "bash", result, isError: false }],
    ["message_start", { message: tr }],
    ["message_end", { message: tr }],
    ["turn_end", { turnIndex: 0, message: a1, toolResults: [tr] }],
    ["message_start", { message: { ...a2, content: [] } }],
    ...words.map((w): [string, Record<string, unknown>] => [
      "message_update",
      { message: a2, assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: w } },
    ]),
    ["message_end", { message: a2 }],
    ["turn_end", { turnIndex: 1, message: a2, toolResults: [] }],
    ["agent_end", { messages: [user, a1, tr, a2] }],
  ];
}

function stats(samples: number[]) {
  const s = [...samples].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  const at = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return { n: s.length, mean, p50: at(0.5), p99: at(0.99), max: s[s.length - 1] };
}

const us = (ms: number) => `${(ms * 1000).toFixed(1)} µs`;

async function measure(label: string, url: string, token: string, home: string) {
  const id = `bench-${label.replaceAll(" ", "-")}-${Date.now()}`;
  const fake = fakePi(id, { cwd: home });
  createLvmhAgent({ url, token, home })(fake.pi);
  await fake.fire("session_start", { reason: "startup" });
  const perEvent: number[] = [];
  const byType = new Map<string, number[]>();
  // Warm-up run, not counted (JIT).
  for (const [name, e] of runEvents(-1)) fake.fireTimed(name, e);
  const runs = Array.from({ length: RUNS }, (_, i) => runEvents(i)); // built before the CPU clock starts
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < RUNS; i++) {
    for (const [name, e] of runs[i]) {
      const ms = fake.fireTimed(name, e);
      perEvent.push(ms);
      const list = byType.get(name);
      if (list) list.push(ms);
      else byType.set(name, [ms]);
    }
    await new Promise((r) => setTimeout(r, 0)); // pi awaits between events; let queued sends go out
  }
  await new Promise((r) => setTimeout(r, 50)); // the last sends
  const cpu = process.cpuUsage(cpu0);
  return { fake, id, perEvent, byType, cpuMs: (cpu.user + cpu.system) / 1000 };
}

function report(label: string, perEvent: number[], byType: Map<string, number[]>) {
  const s = stats(perEvent);
  console.log(
    `${label}: ${s.n} events, mean ${us(s.mean)}, p50 ${us(s.p50)}, p99 ${us(s.p99)}, max ${us(s.max)} ` +
      `(goal: mean < ${GOAL_US} µs) ${s.mean * 1000 < GOAL_US ? "OK" : "OVER GOAL"}`,
  );
  for (const [name, list] of byType) {
    const t = stats(list);
    console.log(`  ${name.padEnd(22)} mean ${us(t.mean).padStart(9)}  p99 ${us(t.p99).padStart(9)}`);
  }
  return s.mean * 1000 < GOAL_US;
}

const home = await Deno.makeTempDir({ prefix: "lvmh-bench-plugin-" });
let ok = true;
try {
  const d = await startDaemon();
  try {
    const up = await measure("daemon up", d.agentUrl, d.token, home);
    await waitFor(async () => {
      const res = await d.api(`/api/sessions/${up.id}/events?after=0&limit=1`);
      await res.body?.cancel();
      return res.status === 200;
    }, "bench session stored");
    const expected = RUNS *
      runEvents(0).filter(([n]) => !["input", "turn_start", "turn_end"].includes(n)).length;
    await waitFor(
      async () => {
        const res = await d.api(`/api/sessions`);
        const list = await res.json() as { id: string; lastSeq: number }[];
        return (list.find((s) => s.id === up.id)?.lastSeq ?? 0) >= expected - DELTAS * RUNS;
      },
      "all events stored",
      60_000,
    );
    ok = report("daemon up  ", up.perEvent, up.byType) && ok;
    console.log(`  process CPU incl. queued sends and acks: ${us(up.cpuMs / up.perEvent.length)} per event`);
    await up.fake.fire("session_shutdown", { reason: "quit" });
  } finally {
    await d.stop();
  }
  const down = await measure(
    "daemon down",
    `ws://127.0.0.1:${freePort()}/agent/ws`,
    "bench-token-123456",
    home,
  );
  ok = report("daemon down", down.perEvent, down.byType) && ok;
  console.log(`  process CPU incl. buffering: ${us(down.cpuMs / down.perEvent.length)} per event`);
  await down.fake.fire("session_shutdown", { reason: "quit" });
} finally {
  await Deno.remove(home, { recursive: true }).catch(() => {});
}
Deno.exit(ok ? 0 : 1);
