/**
 * Tool approvals, the plugin's side, in-process: the TUI asking beside the web, several gated calls of one
 * message asked in turn, and a call made before the daemon's first welcome.
 */
import assert from "node:assert/strict";
import { waitFor } from "../testing/daemon.ts";
import { fakePi } from "../testing/fake_pi.ts";
import { createLvmhAgent } from "../plugin/lvmh-agent.mjs";
import { fakeDaemon, opts, tempHome } from "../testing/plugin_host.ts";
import { call, request, resolved, started } from "../testing/approvals_host.ts";

Deno.test(
  "approvals: the TUI asks too; the first answer wins and the other is withdrawn",
  opts,
  async () => {
    await using d = fakeDaemon({ policy: { ask: ["bash"] } });
    await using h = await tempHome();
    const fake = await started(d, h.home, "appr-6");
    await fake.fire("agent_start");
    await d.waitFrame((f) => f.type === "agent_start", "agent_start");
    const dialogs: {
      title: string;
      signal?: AbortSignal;
      answer: (choice?: string) => void;
    }[] = [];
    fake.ctx.hasUI = true;
    fake.ctx.ui = {
      select: (
        title: string,
        _options: string[],
        o?: { signal?: AbortSignal },
      ) => new Promise<string | undefined>((answer) => dialogs.push({ title, signal: o?.signal, answer })),
    };
    const byTerminal = fake.fire("tool_call", call("u1"));
    const req = await request(d, "u1");
    await waitFor(() => dialogs.length === 1, "terminal dialog");
    assert.match(dialogs[0].title, /bash/);
    dialogs[0].answer("Approve");
    assert.equal(await byTerminal, undefined);
    const res = await resolved(d, req.approvalId);
    assert.deepEqual([res.decision, res.by, res.source], [
      "approve",
      "terminal",
      "terminal",
    ]);
    d.send({
      type: "approval_decision",
      approvalId: req.approvalId,
      decision: "reject",
      by: "late",
    });

    const byWeb = fake.fire("tool_call", call("u2"));
    const req2 = await request(d, "u2");
    await waitFor(() => dialogs.length === 2, "second dialog");
    d.send({
      type: "approval_decision",
      approvalId: req2.approvalId,
      decision: "reject",
      by: "dana",
    });
    assert.deepEqual(await byWeb, { block: true, reason: "Rejected by dana" });
    assert.equal(
      dialogs[1].signal?.aborted,
      true,
      "the terminal question was withdrawn",
    );
    await resolved(d, req2.approvalId);
    assert.equal(
      d.frames.filter((f) => f.type === "approval_resolved").length,
      2,
    );
    await fake.fire("session_shutdown", { reason: "quit" });
  },
);

Deno.test(
  "approvals: three gated calls of one message are asked one at a time",
  opts,
  async () => {
    await using d = fakeDaemon({ policy: { ask: ["bash"] } });
    await using h = await tempHome();
    const fake = await started(d, h.home, "appr-7");
    await fake.fire("agent_start");
    await d.waitFrame((f) => f.type === "agent_start", "agent_start");
    // pi preflights a message's calls in order, each awaited before the next.
    const results: unknown[] = [];
    const all = (async () => {
      for (const id of ["m1", "m2", "m3"]) {
        results.push(
          await fake.fire("tool_call", call(id)),
        );
      }
    })();
    for (const [i, id] of ["m1", "m2", "m3"].entries()) {
      const req = await request(d, id);
      assert.equal(
        d.frames.filter((f) => f.type === "approval_request").length,
        i + 1,
        "one at a time",
      );
      d.send({
        type: "approval_decision",
        approvalId: req.approvalId,
        decision: i === 1 ? "reject" : "approve",
        by: "e",
      });
    }
    await all;
    assert.deepEqual(results, [undefined, {
      block: true,
      reason: "Rejected by e",
    }, undefined]);
    await fake.fire("session_shutdown", { reason: "quit" });
  },
);

Deno.test(
  "approvals: a call before the first welcome waits for the daemon's ask set",
  opts,
  async () => {
    await using d = fakeDaemon({ policy: { ask: ["bash"] } });
    await using h = await tempHome();
    const fake = fakePi("appr-8");
    createLvmhAgent({ url: d.url, token: d.token, home: h.home })(fake.pi);
    await fake.fire("session_start", { reason: "startup" });
    const early = fake.fire("tool_call", call("e1")); // the socket is not even open yet
    const req = await request(d, "e1");
    d.send({
      type: "approval_decision",
      approvalId: req.approvalId,
      decision: "approve",
      by: "f",
    });
    assert.equal(await early, undefined);
    await fake.fire("session_shutdown", { reason: "quit" });
  },
);
