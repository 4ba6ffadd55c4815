/**
 * Tool approvals end to end with the real pi 0.73.1 and 1.6.0, the real daemon and the fake LLM asking for a
 * `bash` call: the call waits (listed pending over REST and /ws, no tool_execution_end), two approvals at once
 * are one record and a later rejection 409, the command runs exactly once, and the plugin reports the answer
 * it applied.
 */
import assert from "node:assert/strict";
import { freePort, startDaemon, waitFor } from "../../testing/daemon.ts";
import { connectBrowser, type Frame } from "../../testing/agent.ts";
import { startFakeLlm } from "../../testing/fixtures/fake_llm.mjs";
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

type Ev = Record<string, unknown> & { seq: number; type: string };

for (const v of PI_VERSIONS) {
  Deno.test(`plugin on pi ${v.name}: a gated bash call waits until approved over REST, then runs once`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using d = await startDaemon({ env: { LVMH_ASK: "bash" } });
    await using home = await makePiHome(llm.url);
    const browser = await connectBrowser(d.browserUrl);
    try {
      // Print mode has no UI: only the web can answer.
      const run = piPrint(v, home, home.env(d), "please run the command");
      const session = await waitFor(
        async () => (await sessions(d)).find((s) => s.cwd === home.workspace),
        "session",
      );
      const id = session.id as string;
      const pending = await waitFor(
        async () => {
          const res = await d.api("/api/approvals?state=pending");
          assert.equal(res.status, 200);
          return ((await res.json()) as Record<string, unknown>[]).find((a) => a.sessionId === id);
        },
        "pending approval",
        20_000,
      );
      assert.equal(pending.toolName, "bash");
      assert.deepEqual(pending.args, { command: "echo hi" });
      const before = await allEvents(d, id) as Ev[];
      assert.ok(before.some((e) => e.type === "approval_request" && e.approvalId === pending.id));
      assert.ok(!before.some((e) => e.type === "tool_execution_end"), "the tool waits");
      // Every browser hears of it too: the /ws `approvals` frame lists it pending.
      await browser.waitFrame(
        (f: Frame) =>
          f.type === "approvals" && (f.pending as { id: string }[]).some((p) => p.id === pending.id),
        "approvals frame on /ws",
      );

      // Two people approve at once, then a third rejects: one record, the same for both, then 409.
      const answer = (decision: string) =>
        d.api(`/api/approvals/${pending.id}`, { method: "POST", body: JSON.stringify({ decision }) });
      const both = await Promise.all([answer("approve"), answer("approve")]);
      assert.deepEqual(both.map((r) => r.status), [200, 200]);
      const [one, two] = await Promise.all(both.map((r) => r.json()));
      // The same decision: one record. Its delivery may have moved on between the two answers (the real pi can
      // apply the first one before the second is answered), so appliedAt and source are not compared.
      const decision = (
        a: Record<string, unknown>,
      ) => [a.id, a.state, a.decidedBy, a.decidedAt, a.reason, a.createdAt, a.toolCallId];
      assert.deepEqual(decision(one), decision(two), "the same answer twice is the same record");
      assert.equal(one.state, "approved");
      const late = await answer("reject");
      assert.equal(late.status, 409);
      assert.equal(typeof (await late.json()).error, "string");
      const out = await run;
      assert.equal(out.code, 0, out.stderr);
      const events = await settledEvents(d, id, "run settled");
      const ends = events.filter((e) => e.type === "tool_execution_end");
      assert.equal(ends.length, 1, "the command ran once");
      assert.match(String(ends[0].resultPreview), /hi/);
      const resolved = events.find((e) => e.type === "approval_resolved");
      assert.equal(resolved?.approvalId, pending.id);
      assert.equal(resolved?.decision, "approve");
      assert.equal(resolved?.source, "web");
      const requestSeq = events.find((e) => e.type === "approval_request")!.seq;
      assert.ok(requestSeq < resolved!.seq && resolved!.seq < ends[0].seq, "asked, answered, then ran");
      assert.equal(events.filter((e) => e.type === "approval_resolved").length, 1, "applied once");
    } finally {
      await browser.close();
      await llm.close();
    }
  });
}

for (const v of PI_VERSIONS) {
  Deno.test(`plugin on pi ${v.name}: an abort while a call waits ends the run, the call blocked`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using d = await startDaemon({ env: { LVMH_ASK: "bash" } });
    await using home = await makePiHome(llm.url);
    await using pi = piRpc(v, home, home.env(d));
    try {
      const id = (await waitFor(async () => (await sessions(d)).find((s) => s.online), "pi online"))
        .id as string;
      await pi.command({ type: "prompt", message: "please run the command" });
      const pending = await waitFor(
        async () => {
          const res = await d.api(`/api/sessions/${id}/approvals`);
          return ((await res.json()) as Record<string, unknown>[]).find((a) => a.state === "pending");
        },
        "pending approval",
        20_000,
      );
      const res = await d.api(`/api/sessions/${id}/abort`, { method: "POST" });
      assert.equal(res.status, 200);
      await res.body?.cancel();
      // A handler that ignored pi's signal would hang the abort for ever: the run must end.
      const events = await settledEvents(d, id, "the run ends", 20_000);
      const resolved = events.find((e) => e.type === "approval_resolved");
      assert.deepEqual([resolved?.approvalId, resolved?.decision, resolved?.source], [
        pending.id,
        "reject",
        "abort",
      ]);
      assert.ok(
        !events.some((e) => e.type === "tool_execution_end" && !e.isError),
        "the command did not run",
      );
      const after = await waitFor(async () => {
        const res = await d.api(`/api/sessions/${id}/approvals`);
        const a = ((await res.json()) as Record<string, unknown>[]).find((x) => x.id === pending.id);
        return a?.state !== "pending" ? a : null;
      }, "the approval is closed");
      assert.equal(after.state, "cancelled");
    } finally {
      await llm.close();
    }
  });
}

for (const v of PI_VERSIONS) {
  Deno.test(`plugin on pi ${v.name}: a rejected call gives the model the reason and the run goes on`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using d = await startDaemon({ env: { LVMH_ASK: "bash" } });
    await using home = await makePiHome(llm.url);
    try {
      const run = piPrint(v, home, home.env(d), "please run the command");
      const pending = await waitFor(
        async () => {
          const res = await d.api("/api/approvals?state=pending");
          return ((await res.json()) as Record<string, unknown>[])[0];
        },
        "pending approval",
        20_000,
      );
      const res = await d.api(`/api/approvals/${pending.id}`, {
        method: "POST",
        body: JSON.stringify({ decision: "reject", reason: "not on my machine" }),
      });
      assert.equal(res.status, 200, await res.clone().text());
      const out = await run;
      assert.equal(out.code, 0, out.stderr);
      const id = pending.sessionId as string;
      const events = await settledEvents(d, id, "run settled");
      const result = events.find((e) =>
        e.type === "message_end" && (e.message as { role: string }).role === "toolResult"
      );
      assert.match(String((result?.message as { text: string }).text), /Rejected by .+: not on my machine/);
      // The fake LLM answers a tool result with text: the agent went on after the block.
      assert.ok(
        events.some((e) => e.type === "message_end" && /^Done\./.test((e.message as { text: string }).text)),
      );
      assert.equal(events.find((e) => e.type === "approval_resolved")?.decision, "reject");
    } finally {
      await llm.close();
    }
  });
}

for (const v of PI_VERSIONS) {
  Deno.test(`plugin on pi ${v.name}: a request pending when the daemon is SIGKILLed is answered after its restart`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using home = await makePiHome(llm.url);
    const dataDir = await Deno.makeTempDir({ prefix: "lvmh-test-" });
    const port = freePort();
    const env = { LVMH_ASK: "bash" };
    let d = await startDaemon({ dataDir, port, env });
    await using pi = piRpc(v, home, home.env(d));
    try {
      const id = (await waitFor(async () => (await sessions(d)).find((s) => s.online), "pi online"))
        .id as string;
      await pi.command({ type: "prompt", message: "please run the command" });
      const pendingIn = async () => {
        const res = await d.api(`/api/sessions/${id}/approvals`);
        return ((await res.json()) as Record<string, unknown>[]).find((a) => a.state === "pending");
      };
      const before = await waitFor(pendingIn, "pending approval", 20_000);
      assert.equal((await d.kill("SIGKILL")).signal, "SIGKILL");
      d = await startDaemon({ dataDir, port, env });
      const after = await waitFor(pendingIn, "still pending after the restart");
      assert.equal(after.id, before.id, "the same request: re-sent with its approvalId");
      await waitFor(async () => (await sessions(d)).find((s) => s.id === id && s.online), "plugin back");
      const res = await d.api(`/api/approvals/${after.id}`, {
        method: "POST",
        body: JSON.stringify({ decision: "approve" }),
      });
      assert.equal(res.status, 200, await res.clone().text());
      const events = await settledEvents(d, id, "the run ends", 20_000);
      assert.equal(events.filter((e) => e.type === "tool_execution_end").length, 1, "ran exactly once");
      assert.equal(events.filter((e) => e.type === "approval_request").length, 1, "the log holds it once");
      assert.equal(events.find((e) => e.type === "approval_resolved")?.approvalId, before.id);
    } finally {
      await d.stop();
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
      await llm.close();
    }
  });
}
