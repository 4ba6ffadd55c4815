/**
 * Browser half of bench/approvals.ts (its own process: playwright-core stays out of deno.lock): a real daemon,
 * a scripted plugin and real Chromium on the session's page. Per round, after the assistant's tool call is on
 * the page: from the plugin's `approval_request` to the approval card in the DOM and to the frame that paints it,
 * and from the click on Approve (the page's own handler, its POST, the daemon) to the
 * `approval_decision` at the plugin, where the real plugin lets pi start the tool. Reference in the same run: a
 * plain event (the assistant message) from the plugin to its row's frame on the same page.
 *
 * Both sides stamp times with `performance.timeOrigin + performance.now()` (nowMs), wall-clock based in both
 * processes on the one machine, so a span may start in Deno and end in the page.
 */
import { startDaemon } from "../testing/daemon.ts";
import { connectAgent } from "../testing/agent.ts";
import { gotoHydrated, launchBrowser, openPage } from "../testing/chromium.ts";
import { nowMs as now, pct } from "../testing/proc.ts";

const ROUNDS = Number(Deno.args[0] ?? 100);
const ID = "bench-approvals-ui";
const GOAL_MS = 50;

await using d = await startDaemon({ env: { LVMH_ASK: "bash" } });
const plugin = await connectAgent(d, { sessionId: ID });
const decidedAt = new Map<string, number>();
plugin.socket.addEventListener("message", (e) => {
  const f = JSON.parse(e.data);
  if (f.type === "approval_decision") decidedAt.set(f.approvalId, now());
});
const browser = await launchBrowser();
const ui = await openPage(browser, d, { signIn: true });

/** Send one event and wait for the daemon's ack (the scripted plugin's socket leaves Nagle on: see approvals.ts). */
let nextSeq = (plugin.welcome.lastSeq as number) + 1;
async function sendAcked(type: string, payload: Record<string, unknown>): Promise<number> {
  const seq = plugin.send(type, payload);
  nextSeq = seq + 1;
  await plugin.waitFrame((f) => f.type === "ack" && (f.lastSeq as number) >= seq, "ack", 10_000);
  return seq;
}

/** In the page: resolve with when `selector` first matched (DOM) and when the frame that paints it began. */
function watch(selector: string): Promise<void> {
  return ui.page.evaluate((selector) => {
    const w = globalThis as unknown as { __seen: Promise<[number, number]> };
    w.__seen = new Promise((resolve) => {
      const stamp = () => performance.timeOrigin + performance.now();
      const found = () => {
        const inserted = stamp();
        // The next animation frame is the one that paints it: its callbacks run right before style, layout and
        // paint. (A task queued after it would also wait for whatever else the page does next.)
        requestAnimationFrame(() => resolve([inserted, stamp()]));
      };
      if (document.querySelector(selector)) return found();
      const mo = new MutationObserver(() => {
        if (!document.querySelector(selector)) return;
        mo.disconnect();
        found();
      });
      mo.observe(document.body, { childList: true, subtree: true, attributes: true });
    });
  }, selector);
}
const seen = () =>
  ui.page.evaluate(() => (globalThis as unknown as { __seen: Promise<[number, number]> }).__seen);

const toCardDom: number[] = [];
const toCardPaint: number[] = [];
const clickToTool: number[] = [];
const plainPaint: number[] = [];
try {
  await sendAcked("agent_start", {});
  await gotoHydrated(ui, d, `/sessions/${ID}`);
  await ui.page.waitForSelector("[data-conn='open']");
  for (let i = 0; i < ROUNDS; i++) {
    const id = `ui-${i}`;
    const call = `c${i}`;
    // Reference: the assistant message asking for the call, from the plugin to its row on the page.
    await watch(`article.msg.assistant[data-seq='${nextSeq}']`);
    let t0 = now();
    await sendAcked("message_end", {
      message: {
        role: "assistant",
        id: `a${i}`,
        text: "",
        thinking: null,
        toolCalls: [{ id: call, name: "bash", argsJson: JSON.stringify({ command: `echo ${i}` }) }],
        toolCallId: null,
      },
    });
    plainPaint.push((await seen())[1] - t0);
    await sendAcked("tool_execution_start", {
      toolCallId: call,
      toolName: "bash",
      args: { command: `echo ${i}` },
    });

    await watch(`[data-approval='${id}'] button.approve`);
    t0 = now();
    await sendAcked("approval_request", {
      approvalId: id,
      toolCallId: call,
      toolName: "bash",
      args: { command: `echo ${i}` },
    });
    const [dom, paint] = await seen();
    toCardDom.push(dom - t0);
    toCardPaint.push(paint - t0);

    const clicked = await ui.page.evaluate((id) => {
      const t = performance.timeOrigin + performance.now();
      (document.querySelector(`[data-approval='${id}'] button.approve`) as HTMLButtonElement).click();
      return t;
    }, id);
    await plugin.waitFrame((f) => f.type === "approval_decision" && f.approvalId === id, "decision", 10_000);
    clickToTool.push(decidedAt.get(id)! - clicked);
    await sendAcked("approval_resolved", { approvalId: id, decision: "approve", by: "bench", source: "web" });
    await sendAcked("tool_execution_end", {
      toolCallId: call,
      toolName: "bash",
      isError: false,
      resultPreview: `${i}`,
    });
    await ui.page.waitForSelector(`[data-approval='${id}'] .delivery.delivered`);
  }
  if (ui.problems.length) throw new Error(`page problems: ${ui.problems.join("; ")}`);
} finally {
  await ui.close();
  await browser.close();
  await plugin.close();
}
const p99 = (v: number[]) => pct([...v].sort((a, b) => a - b), 0.99);
const fmt = (v: number[]) => {
  const sorted = [...v].sort((a, b) => a - b);
  return `p50 ${pct(sorted, 0.5).toFixed(1)} ms, p99 ${pct(sorted, 0.99).toFixed(1)} ms`;
};
console.log(`Chromium (${ROUNDS} rounds):`);
console.log(`  approval_request → card in the DOM: ${fmt(toCardDom)}`);
console.log(`  approval_request → card's frame: ${fmt(toCardPaint)} (goal p99 < ${GOAL_MS} ms)`);
console.log(
  `  click on Approve → approval_decision at the plugin: ${fmt(clickToTool)} (goal p99 < ${GOAL_MS} ms)`,
);
console.log(`  reference, a plain event → its row's frame: ${fmt(plainPaint)}`);
const ok = p99(toCardPaint) < GOAL_MS && p99(clickToTool) < GOAL_MS;
console.log(ok ? "OK" : "GOAL MISSED");
