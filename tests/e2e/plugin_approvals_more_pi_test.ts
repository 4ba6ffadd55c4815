/**
 * Tool approvals with the real pi 0.73.1 and 1.6.0 and the real daemon, for the cases of issue 9 that need
 * more than one scripted `bash` call: three gated calls in one assistant message are each asked and answered
 * in turn (never two waiting at once), and a decision given while the plugin is cut off from the daemon is
 * stored and applied once the plugin reconnects (the cut is a loopback relay between pi and the daemon).
 */
import assert from "node:assert/strict";
import { startDaemon, waitFor } from "../../testing/daemon.ts";
import {
  allEvents,
  assertInstalled,
  makePiHome,
  PI_VERSIONS,
  piPrint,
  piRpc,
  sessions,
  settledEvents,
} from "../../testing/pi.ts";
import { MULTITOOL_COMMANDS as COMMANDS, startFakeLlm } from "../../testing/fixtures/fake_llm.mjs";

type Ev = Record<string, unknown> & { seq: number; type: string };
type Approval = Record<string, unknown> & { id: string; state: string };

/**
 * A TCP relay on loopback to `port`. While `cut`, every connection through it is dropped and new ones are
 * closed as soon as they are accepted, so the plugin behind it sees the daemon as unreachable.
 */
function relay(port: number) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const open = new Set<Deno.Conn>();
  let cut = false;
  const pipe = async (from: Deno.Conn, to: Deno.Conn) => {
    try {
      await from.readable.pipeTo(to.writable);
    } catch { /* either side closed */ }
    for (const c of [from, to]) {
      try {
        c.close();
      } catch { /* closed */ }
      open.delete(c);
    }
  };
  const accepting = (async () => {
    for await (const conn of listener) {
      if (cut) {
        conn.close();
        continue;
      }
      try {
        const upstream = await Deno.connect({ hostname: "127.0.0.1", port });
        open.add(conn).add(upstream);
        void pipe(conn, upstream);
        void pipe(upstream, conn);
      } catch {
        conn.close();
      }
    }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    /** Drop every connection and refuse new ones until `restore`. */
    cut() {
      cut = true;
      for (const c of open) {
        try {
          c.close();
        } catch { /* closed */ }
      }
      open.clear();
    },
    restore() {
      cut = false;
    },
    async close() {
      this.cut();
      listener.close();
      await accepting.catch(() => {});
    },
  };
}

const approvalsOf = async (d: { api(p: string): Promise<Response> }, id: string) =>
  await (await d.api(`/api/sessions/${id}/approvals`)).json() as Approval[];

const decide = async (
  d: { api(p: string, i?: RequestInit): Promise<Response> },
  id: string,
  body: unknown,
) => {
  const res = await d.api(`/api/approvals/${id}`, { method: "POST", body: JSON.stringify(body) });
  assert.equal(res.status, 200, await res.clone().text());
  return await res.json() as Approval;
};

for (const v of PI_VERSIONS) {
  Deno.test(`plugin on pi ${v.name}: three gated calls of one message are asked and answered in turn`, async () => {
    assertInstalled(v);
    // The fake LLM answers MULTITOOL with one assistant message holding three bash calls (COMMANDS).
    const llm = await startFakeLlm();
    await using d = await startDaemon({ env: { LVMH_ASK: "bash" } });
    await using home = await makePiHome(llm.url);
    try {
      const run = piPrint(v, home, home.env(d), "MULTITOOL: run the three commands");
      const id = (await waitFor(
        async () => (await sessions(d)).find((s) => s.cwd === home.workspace),
        "session",
        20_000,
      )).id as string;
      const answers = [{ decision: "approve" }, { decision: "reject", reason: "not two" }, {
        decision: "approve",
      }];
      for (const [i, answer] of answers.entries()) {
        const list = await waitFor(
          async () => {
            const all = await approvalsOf(d, id);
            return all.length === i + 1 && all[i].state === "pending" ? all : null;
          },
          `request ${i + 1}`,
          20_000,
        );
        // In turn: the next call is asked only once this one is answered, and nothing ran unanswered.
        assert.deepEqual(list.filter((a) => a.state === "pending").map((a) => a.id), [list[i].id]);
        assert.deepEqual(list[i].args, { command: COMMANDS[i] });
        // Calls already answered may have run (pi 0.73.1 runs each as soon as it is allowed); no other did.
        const answered = new Set(list.slice(0, i).map((a) => a.toolCallId));
        const ran = (await allEvents(d, id) as Ev[]).filter((e) => e.type === "tool_execution_end");
        assert.ok(
          ran.every((e) => answered.has(e.toolCallId)),
          `only answered calls ran: ${JSON.stringify(ran)}`,
        );
        await decide(d, list[i].id, answer);
      }
      const out = await run;
      assert.equal(out.code, 0, out.stderr);
      const events = await settledEvents(d, id, "run settled", 20_000);
      const requests = events.filter((e) => e.type === "approval_request");
      assert.deepEqual(requests.map((e) => (e.args as { command: string }).command), COMMANDS);
      const resolved = events.filter((e) => e.type === "approval_resolved");
      assert.deepEqual(resolved.map((e) => [e.approvalId, e.decision, e.source]), [
        [requests[0].approvalId, "approve", "web"],
        [requests[1].approvalId, "reject", "web"],
        [requests[2].approvalId, "approve", "web"],
      ]);
      // Each answer came before the next question.
      for (let i = 0; i < 2; i++) assert.ok(resolved[i].seq < requests[i + 1].seq, `answer ${i + 1} first`);
      const ends = events.filter((e) => e.type === "tool_execution_end");
      const byCall = new Map(ends.map((e) => [e.toolCallId, e]));
      assert.equal(ends.length, 3, "each call ended once");
      assert.match(String(byCall.get(requests[0].toolCallId)?.resultPreview), /one-ran/);
      assert.match(String(byCall.get(requests[2].toolCallId)?.resultPreview), /three-ran/);
      const second = byCall.get(requests[1].toolCallId)!;
      assert.equal(second.isError, true, "the rejected call was blocked");
      assert.doesNotMatch(String(second.resultPreview), /two-ran/);
      const final = await approvalsOf(d, id);
      assert.deepEqual(final.map((a) => a.state), ["approved", "rejected", "approved"]);
      assert.ok(final.every((a) => a.appliedAt !== null), "every answer delivered to the agent");
    } finally {
      await llm.close();
    }
  });
}

for (const v of PI_VERSIONS) {
  Deno.test(`plugin on pi ${v.name}: a decision given while the plugin is cut off is applied on its reconnect`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using d = await startDaemon({ env: { LVMH_ASK: "bash" } });
    await using home = await makePiHome(llm.url);
    const link = relay(d.port);
    const env = home.env({ agentUrl: `ws://127.0.0.1:${link.port}/agent/ws`, token: d.token });
    await using pi = piRpc(v, home, env);
    try {
      const id = (await waitFor(async () => (await sessions(d)).find((s) => s.online), "pi online", 20_000))
        .id as string;
      await pi.command({ type: "prompt", message: "please run the command" });
      const pending = await waitFor(
        async () => (await approvalsOf(d, id)).find((a) => a.state === "pending"),
        "pending approval",
        20_000,
      );
      link.cut();
      await waitFor(async () => (await sessions(d)).find((s) => s.id === id && !s.online), "plugin offline");
      const stored = await decide(d, pending.id, { decision: "approve", reason: "while away" });
      assert.deepEqual([stored.state, stored.appliedAt], ["approved", null], "stored, not yet delivered");
      assert.equal(
        (await allEvents(d, id) as Ev[]).filter((e) => e.type === "tool_execution_end").length,
        0,
        "nothing ran while the plugin was away",
      );
      link.restore();
      const events = await settledEvents(d, id, "the run ends after the reconnect", 30_000);
      const ends = events.filter((e) => e.type === "tool_execution_end");
      assert.equal(ends.length, 1, "ran exactly once");
      assert.match(String(ends[0].resultPreview), /hi/);
      assert.equal(events.filter((e) => e.type === "approval_request").length, 1, "the log holds it once");
      const resolved = events.find((e) => e.type === "approval_resolved");
      assert.deepEqual([resolved?.approvalId, resolved?.decision, resolved?.source], [
        pending.id,
        "approve",
        "web",
      ]);
      const applied = (await approvalsOf(d, id)).find((a) => a.id === pending.id)!;
      assert.ok(applied.appliedAt !== null, "delivered to the agent");
      assert.equal(applied.reason, "while away");
    } finally {
      await link.close();
      await llm.close();
    }
  });
}
