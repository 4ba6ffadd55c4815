/**
 * The real pi (0.73.1 and 1.6.0) with the lvmh-agent plugin against the real daemon and the fake LLM:
 * a prompt with a tool call is persisted completely, in order, with the protocol's shapes; `pi -c` continues
 * the seq; without LVMH_URL the plugin is silent and pi works as usual.
 */
import assert from "node:assert/strict";
import { startDaemon, waitFor } from "../../testing/daemon.ts";
import { startFakeLlm } from "../../testing/fixtures/fake_llm.mjs";
import { allEvents, assertInstalled, makePiHome, PI_VERSIONS, piPrint, sessions } from "../../testing/pi.ts";
import { MessageEndEvent, PluginFrame } from "../../lib/protocol.ts";

type Ev = Record<string, unknown> & { seq: number; type: string };

/** The session this pi home's run created (the only one in the daemon). */
async function onlySession(
  d: Parameters<typeof sessions>[0],
): Promise<Record<string, unknown>> {
  const list = await waitFor(async () => {
    const l = await sessions(d);
    return l.length === 1 ? l : null;
  }, "one session");
  return list[0];
}

for (const v of PI_VERSIONS) {
  Deno.test(`plugin on pi ${v.name}: a tool-call prompt is persisted in order with protocol shapes`, async (t) => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using home = await makePiHome(llm.url);
    await using d = await startDaemon();
    try {
      const run = await piPrint(v, home, home.env(d), "Please run echo hi");
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, /Done\. The command printed: "hi"/);

      const s = await onlySession(d);
      const id = s.id as string;
      const events = await waitFor(async () => {
        const evs = await allEvents(d, id) as Ev[];
        return evs.at(-1)?.type === "bye" ? evs : null;
      }, "events through bye");

      await t.step("every persisted event parses as a protocol frame", () => {
        for (const e of events) {
          const parsed = PluginFrame.safeParse({ v: 1, ...e });
          assert.ok(
            parsed.success,
            `seq ${e.seq} (${e.type}) does not parse: ${JSON.stringify(e)}`,
          );
        }
      });

      await t.step("seqs are unique, increasing, and start at 1", () => {
        const seqs = events.map((e) => e.seq);
        assert.equal(seqs[0], 1);
        for (let i = 1; i < seqs.length; i++) {
          assert.ok(
            seqs[i] > seqs[i - 1],
            `seq ${seqs[i]} after ${seqs[i - 1]}`,
          );
        }
      });

      await t.step("the order of a tool-call run", () => {
        // 1.6.0 adds a system message first; tool_execution_update is coalesced, so its count may vary.
        const kinds = events.map((e) =>
          e.type === "message_start" || e.type === "message_end"
            ? `${e.type}:${(e.message as { role: string }).role}`
            : e.type
        ).filter((k) => !k.endsWith(":system") && k !== "tool_execution_update");
        assert.deepEqual(kinds, [
          "agent_start",
          "message_start:user",
          "message_end:user",
          "message_start:assistant",
          "message_end:assistant",
          "tool_execution_start",
          "tool_execution_end",
          "message_start:toolResult",
          "message_end:toolResult",
          "message_start:assistant",
          "message_end:assistant",
          "agent_end",
          "agent_settled",
          "bye",
        ]);
        assert.ok(events.some((e) => e.type === "tool_execution_update"));
      });

      await t.step("message shapes", () => {
        const ends = events.filter((e) => e.type === "message_end").map((e) =>
          MessageEndEvent.parse({ v: 1, ...e }).message
        );
        const user = ends.find((m) => m.role === "user")!;
        assert.equal(user.text, "Please run echo hi");
        const call = ends.find((m) => m.role === "assistant" && m.toolCalls.length)!;
        assert.equal(call.toolCalls[0].name, "bash");
        assert.deepEqual(JSON.parse(call.toolCalls[0].argsJson), {
          command: "echo hi",
        });
        const result = ends.find((m) => m.role === "toolResult")!;
        assert.equal(result.toolCallId, call.toolCalls[0].id);
        assert.equal(result.text.trim(), "hi");
        const last = ends.at(-1)!;
        assert.equal(last.role, "assistant");
        assert.equal(last.text, 'Done. The command printed: "hi"');
        const starts = events.filter((e) => e.type === "message_start").map((
          e,
        ) => (e.message as { id: string }).id);
        assert.deepEqual(
          starts,
          ends.map((m) => m.id),
          "message_start and message_end carry the same ids",
        );
        assert.equal(
          new Set(starts).size,
          starts.length,
          "message ids are unique",
        );
      });

      await t.step("tool events and usage", () => {
        const start = events.find((e) => e.type === "tool_execution_start")!;
        assert.deepEqual(start.args, { command: "echo hi" });
        assert.equal(start.toolName, "bash");
        const end = events.find((e) => e.type === "tool_execution_end")!;
        assert.equal(end.isError, false);
        assert.equal((end.resultPreview as string).trim(), "hi");
        const agentEnd = events.find((e) => e.type === "agent_end")!;
        const usage = agentEnd.usage as {
          inputTokens: number;
          outputTokens: number;
          totalCost: number;
        };
        assert.equal(
          usage.outputTokens,
          10 + 3,
          "output tokens summed over both assistant messages",
        );
        assert.ok(usage.inputTokens > 0);
      });

      await t.step("the session snapshot", async () => {
        const [sess] = await sessions(d);
        assert.equal(sess.model, "fake-model");
        assert.equal(sess.provider, "fake");
        assert.equal(sess.cwd, home.workspace);
        assert.equal(sess.agent, false);
        assert.equal(sess.online, false, "bye took the session offline");
        assert.ok(
          typeof sess.startedAt === "number" &&
            sess.startedAt > Date.now() - 120_000,
        );
      });

      await t.step("pi -c continues the seq", async () => {
        const lastSeq = events.at(-1)!.seq;
        const again = await piPrint(v, home, home.env(d), "TEXTONLY second", [
          "-c",
        ]);
        assert.equal(again.code, 0, again.stderr);
        const all = await waitFor(async () => {
          const evs = await allEvents(d, id) as Ev[];
          return evs.filter((e) => e.type === "bye").length === 2 ? evs : null;
        }, "second run's events");
        const second = all.filter((e) => e.seq > lastSeq);
        assert.equal(
          second[0].seq,
          lastSeq + 1,
          "the second process starts right after the first one's last seq",
        );
        assert.equal((await sessions(d)).length, 1, "same session");
        const seqs = all.map((e) => e.seq);
        assert.equal(new Set(seqs).size, seqs.length);
        const text = second.filter((e) => e.type === "message_end").map((e) =>
          (e.message as { text: string }).text
        );
        assert.ok(
          text.includes("You said: TEXTONLY second"),
          JSON.stringify(text),
        );
      });
      await t.step("reasoning arrives as the message's thinking", async () => {
        const run3 = await piPrint(v, home, home.env(d), "THINK please", ["-c"]);
        assert.equal(run3.code, 0, run3.stderr);
        const all = await waitFor(async () => {
          const evs = await allEvents(d, id) as Ev[];
          return evs.filter((e) => e.type === "bye").length === 3 ? evs : null;
        }, "third run's events");
        const last = all.filter((e) => e.type === "message_end").at(-1)!.message as Record<string, unknown>;
        assert.equal(last.text, "Thought about it.");
        assert.equal(last.thinking, "Let me think.");
      });
      assert.equal(
        home.pluginLog().includes(d.token),
        false,
        "the token is never logged",
      );
    } finally {
      await llm.close();
    }
  });

  Deno.test(`plugin on pi ${v.name}: silent without LVMH_URL, and with the daemon down`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using home = await makePiHome(llm.url);
    try {
      const t0 = Date.now();
      const plain = await piPrint(v, home, home.env(), "TEXTONLY hello");
      const plainMs = Date.now() - t0;
      assert.equal(plain.code, 0, plain.stderr);
      assert.equal(plain.stdout.trim(), "You said: TEXTONLY hello");
      assert.equal(plain.stderr.includes("lvmh"), false, plain.stderr);
      // A port nothing listens on: pi still answers, at once, and exits normally.
      const down = {
        agentUrl: "ws://127.0.0.1:9/agent/ws",
        token: "x-token-123456789",
      };
      const started = Date.now();
      const off = await piPrint(v, home, home.env(down), "TEXTONLY again");
      assert.equal(off.code, 0, off.stderr);
      assert.equal(off.stdout.trim(), "You said: TEXTONLY again");
      // Not held up by the plugin (no connect wait at start or exit); the slack absorbs a busy machine.
      const offMs = Date.now() - started;
      assert.ok(
        offMs < plainMs + 5_000,
        `${offMs} ms with the daemon down vs ${plainMs} ms without the plugin`,
      );
      assert.equal(off.stderr.includes("lvmh"), false, off.stderr);
    } finally {
      await llm.close();
    }
  });
}
