/**
 * Tool approvals in pi's interactive TUI (0.73.1 and 1.6.0, under a pty from `script`), with the real
 * daemon asking for `bash`: the question shows in the terminal too; answered there (Enter on "Approve"),
 * the command runs and the daemon hears `source: terminal`; answered from the web, the terminal question is
 * withdrawn and the command runs once.
 */
import assert from "node:assert/strict";
import { startDaemon, waitFor } from "../../testing/daemon.ts";
import { startFakeLlm } from "../../testing/fixtures/fake_llm.mjs";
import { signalChild } from "../../testing/proc.ts";
import { allEvents, assertInstalled, makePiHome, PI_VERSIONS, piTui, sessions } from "../../testing/pi.ts";

type Ev = Record<string, unknown> & { seq: number; type: string };

for (const v of PI_VERSIONS) {
  Deno.test(`plugin in the pi ${v.name} TUI: an approval is answered in the terminal or on the web`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using home = await makePiHome(llm.url);
    await using d = await startDaemon({ env: { LVMH_ASK: "bash" } });
    const child = piTui(v, home, d);
    const stdin = child.stdin.getWriter();
    let screen = "";
    const pump = (async () => {
      for await (const c of child.stdout.pipeThrough(new TextDecoderStream())) screen += c;
    })();
    const prompt = async (id: string, message: string) => {
      const res = await d.api(`/api/sessions/${id}/prompt`, {
        method: "POST",
        body: JSON.stringify({ message }),
      });
      assert.equal(res.status, 200);
      await res.body?.cancel();
    };
    const resolvedEvents = async (id: string) =>
      (await allEvents(d, id) as Ev[]).filter((e) => e.type === "approval_resolved");
    try {
      const s = await waitFor(
        async () => (await sessions(d)).find((s) => s.online),
        "TUI session online",
        30_000,
      );
      const id = s.id as string;

      await prompt(id, "run the command");
      await waitFor(() => screen.includes("lvmh: allow bash"), "the question in the terminal", 20_000);
      await stdin.write(new TextEncoder().encode("\r")); // Enter: the first choice, Approve
      const first = await waitFor(
        async () => (await resolvedEvents(id))[0],
        "resolved in the terminal",
        20_000,
      );
      assert.deepEqual([first.decision, first.by, first.source], ["approve", "terminal", "terminal"]);
      // What the web card is built from: the daemon's record says the terminal answered, and it was applied.
      const record = await waitFor(async () => {
        const res = await d.api(`/api/sessions/${id}/approvals`);
        const list = await res.json() as Record<string, unknown>[];
        return list.find((a) => a.id === first.approvalId && a.appliedAt !== null);
      }, "the terminal's answer recorded");
      assert.deepEqual([record.state, record.decidedBy, record.source], ["approved", "terminal", "terminal"]);
      await waitFor(
        async () => (await allEvents(d, id) as Ev[]).filter((e) => e.type === "agent_settled").length === 1,
        "first run settles",
        30_000,
      );

      await prompt(id, "run the command again");
      const pending = await waitFor(
        async () => {
          const res = await d.api(`/api/sessions/${id}/approvals`);
          const list = await res.json() as Record<string, unknown>[];
          return list.find((a) => a.state === "pending");
        },
        "second request pending",
        20_000,
      );
      const res = await d.api(`/api/approvals/${pending.id}`, {
        method: "POST",
        body: JSON.stringify({ decision: "approve" }),
      });
      assert.equal(res.status, 200, await res.clone().text());
      await res.body?.cancel();
      const events = await waitFor(
        async () => {
          const evs = await allEvents(d, id) as Ev[];
          return evs.filter((e) => e.type === "agent_settled").length === 2 ? evs : null;
        },
        "second run settles",
        30_000,
      );
      const second = events.filter((e) => e.type === "approval_resolved")[1];
      assert.deepEqual([second.approvalId, second.source], [pending.id, "web"]);
      assert.equal(events.filter((e) => e.type === "tool_execution_end").length, 2, "each command ran once");
      assert.equal(events.filter((e) => e.type === "approval_resolved").length, 2, "no late terminal answer");
    } finally {
      signalChild(child, "SIGKILL");
      await child.status;
      await stdin.close().catch(() => {});
      await pump;
      await llm.close();
    }
  });
}
