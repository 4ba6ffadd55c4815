/**
 * A session read as its runs (`GET /api/sessions/:id/runs`) from the real pi 0.73.1 and 1.6.0 (RPC mode, the
 * fake LLM): a run that ends, a steer mid-run (the run keeps its first prompt), a hook's prompt, an aborted
 * run, and a run that fails because the LLM went away.
 */
import assert from "node:assert/strict";
import { startDaemon, waitFor } from "../../testing/daemon.ts";
import { startFakeLlm } from "../../testing/fixtures/fake_llm.mjs";
import { allEvents, assertInstalled, makePiHome, PI_VERSIONS, piRpc, sessions } from "../../testing/pi.ts";
import type { RunSummary } from "../../lib/protocol.ts";

for (const v of PI_VERSIONS) {
  Deno.test(`pi ${v.name}: runs derived from a real session: done, steered, hook, aborted, failed`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using home = await makePiHome(llm.url);
    await using d = await startDaemon();
    await using pi = piRpc(v, home, home.env(d));
    const id = (await waitFor(async () => (await sessions(d)).find((s) => s.online), "pi online", 20_000))
      .id as string;
    const runs = async () => await (await d.api(`/api/sessions/${id}/runs`)).json() as RunSummary[];
    const settled = async (n: number) =>
      await waitFor(
        async () => {
          const evs = await allEvents(d, id) as { type: string }[];
          return evs.filter((e) => e.type === "agent_settled").length >= n || undefined;
        },
        `${n} run(s) settled`,
        60_000,
      );
    const prompt = async (message: string, deliverAs = "steer") => {
      const res = await d.api(`/api/sessions/${id}/prompt`, {
        method: "POST",
        body: JSON.stringify({ message, deliverAs }),
      });
      assert.equal(res.status, 200, await res.clone().text());
      await res.body?.cancel();
    };

    // 1: a tool call, and a steer while it runs.
    await prompt("SLEEPTOOL first run");
    await waitFor(async () => (await runs())[0]?.tools.bash === 1 || undefined, "the bash call", 30_000);
    await prompt("TEXTONLY steer mid-run");
    await settled(1);
    // 2: a hook's prompt.
    const hook = await d.api("/hooks/generic", {
      method: "POST",
      body: JSON.stringify({ sessionId: id, message: "TEXTONLY from a hook" }),
    });
    assert.equal(hook.status, 202);
    await hook.body?.cancel();
    await settled(2);
    // 3: aborted.
    await prompt("SLOW take your time");
    await waitFor(async () => (await runs())[0]?.state === "running" || undefined, "the slow run", 30_000);
    const abort = await d.api(`/api/sessions/${id}/abort`, { method: "POST" });
    assert.equal(abort.status, 200);
    await abort.body?.cancel();
    await settled(3);
    // 4: the LLM is gone.
    await llm.close();
    await prompt("TEXTONLY nobody answers");
    await waitFor(
      async () => {
        const r = (await runs())[0];
        return r && r.prompt?.text === "TEXTONLY nobody answers" && r.state !== "running" || undefined;
      },
      "the failed run ended",
      90_000,
    );

    const all = (await runs()).reverse();
    assert.deepEqual(all.map((r) => [r.prompt?.text, r.prompt?.source, r.state]), [
      ["SLEEPTOOL first run", "web", "done"],
      ["TEXTONLY from a hook", "hook", "done"],
      ["SLOW take your time", "web", "aborted"],
      ["TEXTONLY nobody answers", "web", "failed"],
    ]);
    assert.deepEqual(all[0].tools, { bash: 1 });
    assert.ok(all[0].usage.inputTokens > 0, "usage of the first run");
    assert.equal(all[1].prompt?.by, "hook:bootstrap");
    assert.ok(all[3].error, "the failure's message");
    for (const r of all) assert.ok(r.endSeq! > r.startSeq && r.endedAt! >= r.startedAt);
    await pi.stop();
  });
}
