/**
 * The plugin on the real pi (RPC mode, 0.73.1 and 1.6.0) when the daemon goes away: SIGKILLed mid-run and
 * restarted on the same port and data dir, or not running yet when pi starts. Either way pi keeps working
 * and, once the daemon is back, every persisted seq is unique and the only gaps are streaming deltas.
 */
import assert from "node:assert/strict";
import { freePort, startDaemon, waitFor } from "../../testing/daemon.ts";
import { startFakeLlm } from "../../testing/fixtures/fake_llm.mjs";
import { allEvents, assertInstalled, makePiHome, PI_VERSIONS, piRpc, sessions } from "../../testing/pi.ts";

type Ev = Record<string, unknown> & { seq: number; type: string };
const role = (e: Ev) => (e.message as { role?: string } | undefined)?.role;

/** Number of text/thinking deltas pi streamed, from its own RPC output. */
function deltasIn(lines: Record<string, unknown>[]): number {
  return lines.filter((l) => {
    const a = l.type === "message_update" ? (l.assistantMessageEvent as { type: string }) : null;
    return a?.type === "text_delta" || a?.type === "thinking_delta";
  }).length;
}

/** Assert seqs are unique and increasing, and every gap sits inside an assistant message (its deltas). */
function assertGapsOnlyDeltas(events: Ev[], expectedMissing: number) {
  let missing = 0;
  for (let i = 1; i < events.length; i++) {
    const a = events[i - 1], b = events[i];
    assert.ok(b.seq > a.seq, `seq ${b.seq} after ${a.seq}`);
    if (b.seq === a.seq + 1) continue;
    assert.ok(
      a.type === "message_start" && role(a) === "assistant" &&
        b.type === "message_end" && role(b) === "assistant",
      `gap ${a.seq}..${b.seq} between ${a.type} and ${b.type} is not a streaming gap`,
    );
    missing += b.seq - a.seq - 1;
  }
  assert.equal(missing, expectedMissing, "missing seqs are exactly the deltas");
}

for (const v of PI_VERSIONS) {
  Deno.test(`plugin on pi ${v.name}: daemon SIGKILLed mid-run and restarted`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm({ slowMs: 20 });
    await using home = await makePiHome(llm.url);
    const dataDir = await Deno.makeTempDir({ prefix: "lvmh-test-" });
    const port = freePort();
    let d = await startDaemon({ dataDir, port });
    await using pi = piRpc(v, home, home.env(d));
    try {
      const id = (await waitFor(async () => (await sessions(d)).find((s) => s.online), "pi online"))
        .id as string;
      await pi.command({
        type: "prompt",
        message: "SLOW then the daemon dies",
      });
      await waitFor(
        async () => (await allEvents(d, id) as Ev[]).some((e) => role(e) === "assistant"),
        "streaming",
      );
      const status = await d.kill("SIGKILL");
      assert.equal(status.signal, "SIGKILL");
      // pi carries on without the daemon: the run finishes, and a second one too.
      await pi.waitLine((l) => l.type === "agent_end", "run ends with the daemon down");
      await pi.command({ type: "prompt", message: "Please run echo hi" });
      await waitFor(() => pi.lines.filter((l) => l.type === "agent_end").length === 2, "second run ends");

      d = await startDaemon({ dataDir, port });
      // Both runs ended, then pi went idle.
      const events = await waitFor(
        async () => {
          const evs = await allEvents(d, id) as Ev[];
          const ends = evs.filter((e) => e.type === "agent_end").length;
          if (ends === 2 && evs.at(-1)?.type === "agent_settled") return evs;
          throw new Error(`${evs.length} events, ${ends} agent_end, last ${evs.at(-1)?.type}`);
        },
        "everything after the restart",
        40_000,
      );
      // One settle per idle point: pi 1.6.0 reports its own, on 0.73.1 the plugin settles each run.
      const piSettles = pi.lines.filter((l) => l.type === "agent_settled").length;
      assert.equal(events.filter((e) => e.type === "agent_settled").length, piSettles || 2);
      assert.equal(events[0].seq, 1);
      assertGapsOnlyDeltas(events, deltasIn(pi.lines));
      const texts = events.filter((e) => e.type === "message_end").map((e) =>
        (e.message as { text: string }).text
      );
      assert.ok(
        texts.some((t) => t.startsWith("slow0 ") && t.includes("slow59")),
        "the whole slow answer",
      );
      assert.ok(texts.includes('Done. The command printed: "hi"'));
      assert.equal(await pi.stop(), 0);
      await waitFor(
        async () => (await allEvents(d, id) as Ev[]).at(-1)?.type === "bye",
        "bye",
      );
    } finally {
      await d.stop();
      await llm.close();
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  });

  Deno.test(`plugin on pi ${v.name}: daemon down when pi starts, receives everything later`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using home = await makePiHome(llm.url);
    const port = freePort();
    const target = {
      agentUrl: `ws://127.0.0.1:${port}/agent/ws`,
      token: "test-token-0123456789abcdef",
    };
    await using pi = piRpc(v, home, home.env(target));
    let d: Awaited<ReturnType<typeof startDaemon>> | null = null;
    try {
      const res = await pi.command({
        type: "prompt",
        message: "Please run echo hi",
      });
      assert.equal(res.success, true, JSON.stringify(res));
      await pi.waitLine(
        (l) => l.type === "agent_end",
        "pi works without the daemon",
      );
      const state = await pi.command({ type: "get_state" });
      const id = (state.data as { sessionId: string }).sessionId;

      d = await startDaemon({ port });
      const events = await waitFor(
        async () => {
          const list = await sessions(d!);
          if (!list.length) return null;
          const evs = await allEvents(d!, id) as Ev[];
          return evs.some((e) => e.type === "agent_settled") ? evs : null;
        },
        "the buffered events",
        40_000,
      );
      assert.equal(events[0].seq, 1);
      assert.equal(events[0].type, "agent_start");
      assertGapsOnlyDeltas(events, deltasIn(pi.lines));
      assert.equal(
        events.filter((e) => e.type === "tool_execution_end").length,
        1,
      );
      const [s] = await sessions(d);
      assert.equal(s.id, id);
      assert.equal(s.online, true);
    } finally {
      await pi.kill();
      await d?.stop();
      await llm.close();
    }
  });
}
