/**
 * Approvals benchmark (issue 9): from the plugin's `approval_request` to the `approvals` frame at a subscribed
 * browser ("the card"), and from the person's POST to the `approval_decision` at the plugin ("the tool starts"),
 * through a real daemon process on loopback. Goal: p99 < 50 ms each. The reference is a plain event's trip to
 * the same browser in the same run (what the approval path adds on top of ingest and fan-out).
 *
 * The scripted plugin is Deno's WebSocket client, which leaves Nagle's algorithm on (the real plugin's Node
 * sockets set TCP_NODELAY): a second small frame written before the daemon ACKed the first waits for the daemon's
 * delayed ACK, ~40 ms. So each phase starts once the daemon's `ack` for the previous one came back, and the
 * plugin's answer (`approval_resolved` and the tool start) goes out as one `batch` frame.
 *
 * Then bench/_approvals_browser.ts measures the same spans in real Chromium: to the card painted on the session
 * page, and from the click on Approve to the decision at the plugin; and bench/approvals_pi.ts from the approve
 * POST to the tool released and run by the real pi (0.73.1 and 1.6.0).
 */
import { startDaemon } from "../testing/daemon.ts";
import { connectAgent, connectBrowser, eventFrame, type Frame } from "../testing/agent.ts";
import { runWithThrowawayLock } from "../testing/ui_fill.ts";

const ROUNDS = 300;

function pct(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

async function until<T>(find: () => T | undefined): Promise<T> {
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    await new Promise((r) => setTimeout(r, 0));
  }
}

await using d = await startDaemon({ env: { LVMH_ASK: "bash" } });
const plugin = await connectAgent(d, { sessionId: "bench-approvals" });
const browser = await connectBrowser(d.browserUrl);
browser.send({ type: "subscribe", sessionId: "bench-approvals", after: 0 });
let nextSeq = (plugin.welcome.lastSeq as number) + 1;
/** Send events in one `batch` frame; returns the last seq. */
function sendBatch(events: [string, Record<string, unknown>][]): number {
  const ts = Date.now();
  const framed = events.map(([type, payload]) => eventFrame(plugin.sessionId, nextSeq++, type, payload, ts));
  plugin.socket.send(JSON.stringify(eventFrame(plugin.sessionId, 0, "batch", { events: framed }, ts)));
  return nextSeq - 1;
}
const toCard: number[] = [];
const toTool: number[] = [];
const plain: number[] = [];
try {
  for (let i = 0; i < ROUNDS; i++) {
    const id = `bench-${i}`;
    const seen = browser.frames.length;
    let t0 = performance.now();
    const asked = sendBatch([["approval_request", {
      approvalId: id,
      toolCallId: `c${i}`,
      toolName: "bash",
      args: {},
    }]]);
    await until(() =>
      browser.frames.slice(seen).find((f: Frame) =>
        f.type === "approvals" && (f.pending as { id: string }[]).some((p) => p.id === id)
      )
    );
    toCard.push(performance.now() - t0);
    await plugin.waitFrame((f) => f.type === "ack" && (f.lastSeq as number) >= asked, "ack");

    const decided = plugin.frames.length;
    t0 = performance.now();
    const res = d.api(`/api/approvals/${id}`, {
      method: "POST",
      body: JSON.stringify({ decision: "approve" }),
    });
    await until(() =>
      plugin.frames.slice(decided).find((f) => f.type === "approval_decision" && f.approvalId === id)
    );
    toTool.push(performance.now() - t0);
    await (await res).body?.cancel();

    const before = browser.frames.length;
    t0 = performance.now();
    const seq = sendBatch([
      ["approval_resolved", { approvalId: id, decision: "approve", by: "bootstrap", source: "web" }],
      ["tool_execution_start", { toolCallId: `c${i}`, toolName: "bash", args: {} }],
    ]);
    await until(() =>
      browser.frames.slice(before).find((f) =>
        f.type === "events" && (f.events as { seq: number }[]).some((e) => e.seq === seq)
      )
    );
    plain.push(performance.now() - t0);
    await plugin.waitFrame((f) => f.type === "ack" && (f.lastSeq as number) >= seq, "ack");
  }
} finally {
  await browser.close();
  await plugin.close();
}
const fmt = (v: number[]) => `p50 ${pct(v, 0.5).toFixed(2)} ms, p99 ${pct(v, 0.99).toFixed(2)} ms`;
console.log(`approval_request → card on a subscribed browser (${ROUNDS}): ${fmt(toCard)} (goal p99 < 50 ms)`);
console.log(`approve POST → approval_decision at the plugin (${ROUNDS}): ${fmt(toTool)} (goal p99 < 50 ms)`);
console.log(`reference, a plain event → the same browser: ${fmt(plain)}`);
const ok = pct(toCard, 0.99) < 50 && pct(toTool, 0.99) < 50;
console.log(ok ? "OK" : "GOAL MISSED");

// The same two spans as a person sees them: the card painted in Chromium, and the click on its button.
await d.stop(); // its own daemon, so this one's idle process does not share the cores
const code = await runWithThrowawayLock(new URL("_approvals_browser.ts", import.meta.url).pathname, ["100"]);
if (code !== 0) throw new Error(`the browser half exited with ${code}`);

// From the click to the tool starting, with the real pi and its plugin instead of a scripted one.
const real = await new Deno.Command(Deno.execPath(), {
  args: ["run", "-A", new URL("approvals_pi.ts", import.meta.url).pathname, "100"],
  stdout: "inherit",
  stderr: "inherit",
}).output();
if (real.code !== 0) throw new Error(`bench/approvals_pi.ts exited with ${real.code}`);
