/**
 * Scrolling back through a long session in real Chromium against the real daemon: an older page is added above
 * (ui/use_conversation.ts) into blocks of messages (.msg-block), and the message the reader is looking at
 * must not move in any frame while that happens. Also: the newest message is in view on arrival, and tool
 * calls whose call and result fall on two pages still show inside their message.
 */
import assert from "node:assert/strict";
import { startDaemon, waitFor } from "../../testing/daemon.ts";
import { connectAgent, sessionInfo } from "../../testing/agent.ts";
import { gotoHydrated, launchBrowser, loadAllOlder, openPage } from "../../testing/chromium.ts";

const ID = "history-anchor";
const RUNS = 100;

function message(role: string, id: string, text: string, extra: Record<string, unknown> = {}) {
  return { message: { role, id, text, thinking: null, toolCalls: [], toolCallId: null, ...extra } };
}

Deno.test("UI: scrolling back keeps the reader's message in place", async (t) => {
  const daemon = await startDaemon();
  const browser = await launchBrowser();
  const agent = await connectAgent(daemon, { sessionId: ID, session: sessionInfo(ID) });
  try {
    // 100 runs of 8 events (800): a prompt, an answer with a bash call, its events and result, a last answer.
    let last = 0;
    for (let r = 1; r <= RUNS; r++) {
      const call = `c${r}`;
      agent.send("agent_start");
      agent.send("message_end", message("user", `u${r}`, `prompt number ${r}`));
      agent.send(
        "message_end",
        message("assistant", `a${r}`, `Looking at **module ${r}**:\n\n\`\`\`ts\nconst x = ${r};\n\`\`\``, {
          toolCalls: [{ id: call, name: "bash", argsJson: JSON.stringify({ command: `ls ${r}` }) }],
        }),
      );
      agent.send("tool_execution_start", {
        toolCallId: call,
        toolName: "bash",
        args: { command: `ls ${r}` },
      });
      agent.send("tool_execution_end", {
        toolCallId: call,
        toolName: "bash",
        isError: false,
        resultPreview: "ok",
      });
      agent.send("message_end", message("toolResult", `r${r}`, "a.txt\nb.txt", { toolCallId: call }));
      agent.send("message_end", message("assistant", `b${r}`, `answer number ${r}`));
      last = agent.send("agent_end", { usage: { inputTokens: 10, outputTokens: 5, totalCost: 0.001 } });
    }
    await waitFor(
      async () =>
        ((await (await daemon.api("/api/sessions")).json()) as { id: string; lastSeq: number }[])
          .find((s) => s.id === ID)?.lastSeq === last,
      "history stored",
    );
    const ui = await openPage(browser, daemon, { signIn: true });
    try {
      await gotoHydrated(ui, daemon, `/sessions/${ID}`);
      const p = ui.page;

      await t.step("the newest message is in view on arrival", async () => {
        await waitFor(
          () =>
            p.evaluate(() => {
              const all = document.querySelectorAll(".conversation [data-seq]");
              const r = all[all.length - 1].getBoundingClientRect();
              return r.bottom > 0 && r.top < innerHeight &&
                /answer number 100/.test(all[all.length - 2].textContent!);
            }),
          "newest message in view",
        );
      });

      await t.step(
        "a page added above does not move the message on top of the view, in any frame",
        async () => {
          const before = await p.locator(".conversation [data-seq]").count();
          // At the top: the first prompt held is the one read. Its position is sampled every frame until the
          // whole older page is in.
          const moves = await p.evaluate(async (target: number) => {
            scrollTo(0, 0);
            // (The first message held may be a result whose call is older: it joins its call's card later.)
            const read = document.querySelector(".conversation .msg.user")!;
            const y0 = read.getBoundingClientRect().top;
            const seen: number[] = [];
            const counts = new Set<number>();
            const deadline = performance.now() + 10_000;
            await new Promise<void>((done) => {
              const step = () => {
                seen.push(read.getBoundingClientRect().top - y0);
                const n = document.querySelectorAll(".conversation [data-seq]").length;
                counts.add(n);
                if (n >= target || performance.now() > deadline) done();
                else requestAnimationFrame(step);
              };
              requestAnimationFrame(step);
            });
            // Two more frames: anything that settles after the page went in.
            for (let i = 0; i < 2; i++) {
              await new Promise((r) => requestAnimationFrame(r));
              seen.push(read.getBoundingClientRect().top - y0);
            }
            return {
              seen,
              frames: counts.size,
              count: document.querySelectorAll(".conversation [data-seq]").length,
            };
          }, before + 140);
          assert.ok(moves.count > before, `an older page came in (${before} -> ${moves.count})`);
          await waitFor(
            async () => (await p.locator(".conversation [data-seq]").count()) >= before + 120,
            "whole page",
          );
          const worst = Math.max(...moves.seen.map(Math.abs));
          assert.ok(
            worst <= 1,
            `the message read moved by up to ${worst} px: ${moves.seen.map((d) => d.toFixed(0))}`,
          );
        },
      );

      await t.step(
        "every call shows inside its message after all pages, none cut off by a page boundary",
        async () => {
          const seqs = await loadAllOlder(p);
          assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b));
          assert.equal(new Set(seqs).size, seqs.length);
          // Per run: prompt, answer with its card, closing answer, run end.
          assert.equal(seqs.length, RUNS * 4);
          assert.equal(await p.locator(".conversation .msg.tool-result").count(), 0, "no result left alone");
          assert.equal(await p.locator(".conversation details.tool").count(), RUNS);
          assert.deepEqual(ui.problems, []);
        },
      );
    } finally {
      await ui.close();
    }
  } finally {
    await agent.close();
    await browser.close();
    await daemon.stop();
  }
});
