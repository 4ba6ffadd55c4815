/** `lvmh budget` (the built cli/lvmh.mjs on Node) against an in-process daemon: show, set, change, clear. */
import assert from "node:assert/strict";
import { startInProcess } from "../testing/inproc.ts";
import { connectAgent } from "../testing/agent.ts";
import { cliEnv, lvmh } from "../testing/cli.ts";

Deno.test("lvmh budget ID [--cost D] [--tokens N] [--on ask|stop] [--clear]", async () => {
  await using d = await startInProcess();
  const configDir = await Deno.makeTempDir({ prefix: "lvmh-cli-budget-" });
  const agent = await connectAgent(d, { sessionId: "cli-budget" });
  try {
    const env = cliEnv(configDir, d);
    const none = await lvmh(env, ["budget", "cli-budget"]);
    assert.equal(none.code, 0, none.stderr);
    assert.equal(none.stdout, "no budget; spent $0.00, 0 tokens\n");

    const set = await lvmh(env, ["budget", "cli-budget", "--cost", "2.5", "--tokens", "50000"]);
    assert.equal(set.code, 0, set.stderr);
    assert.equal(set.stdout, "budget $0.00 of $2.50, 0 of 50,000 tokens; then ask (set on the session)\n");
    const policy = await agent.waitFrame(
      (f) => f.type === "policy" && (f.budget as { maxCost?: number } | null)?.maxCost === 2.5,
      "the plugin hears the budget",
    );
    assert.equal((policy.budget as { maxTokens: number }).maxTokens, 50000);

    // Only what is given changes; the rest stays as in force.
    const stop = await lvmh(env, ["budget", "cli-budget", "--on", "stop", "--json"]);
    assert.equal(stop.code, 0, stop.stderr);
    const view = JSON.parse(stop.stdout);
    assert.deepEqual(
      [view.budget.maxCost, view.budget.maxTokens, view.budget.onReach, view.budget.source],
      [2.5, 50000, "stop", "session"],
    );
    const stored = await (await d.api("/api/sessions/cli-budget/budget")).json();
    assert.deepEqual(stored, view);

    const clear = await lvmh(env, ["budget", "cli-budget", "--clear"]);
    assert.equal(clear.code, 0, clear.stderr);
    assert.match(clear.stdout, /^no budget/);
    assert.equal((await (await d.api("/api/sessions/cli-budget/budget")).json()).budget, null);

    for (
      const args of [
        ["budget"],
        ["budget", "cli-budget", "--cost", "-1"],
        ["budget", "cli-budget", "--tokens", "1.5"],
        ["budget", "cli-budget", "--on", "later"],
        ["budget", "cli-budget", "--clear", "--cost", "1"],
        ["budget", "cli-budget", "--on", "stop"], // no budget to change
      ]
    ) {
      const bad = await lvmh(env, args);
      assert.equal(bad.code, 2, `${args.join(" ")}: ${bad.stdout}${bad.stderr}`);
    }
    const missing = await lvmh(env, ["budget", "nobody", "--cost", "1"]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /does not exist/);

    // A viewer sees it, but may not set it.
    const res = await d.api("/api/tokens", {
      method: "POST",
      body: JSON.stringify({ name: "watcher", role: "viewer" }),
    });
    const viewer = { url: d.url, token: (await res.json()).token as string };
    const seen = await lvmh(cliEnv(configDir, viewer), ["budget", "cli-budget"]);
    assert.equal(seen.code, 0, seen.stderr);
    const refused = await lvmh(cliEnv(configDir, viewer), ["budget", "cli-budget", "--cost", "9"]);
    assert.equal(refused.code, 1);
  } finally {
    await agent.close();
    await Deno.remove(configDir, { recursive: true });
  }
});
