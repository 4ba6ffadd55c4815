/**
 * Usage reports over a real daemon and scripted plugins: `GET /api/usage` groups runs by day, session, repo,
 * person (the token that prompted, `terminal` otherwise) and model, counting each assistant message's usage
 * (or a run's agent_end usage from older plugins); the `/usage` page draws the days as SVG and lists the
 * budgets in force.
 */
import assert from "node:assert/strict";
import { startDaemon, waitFor } from "../testing/daemon.ts";
import { connectAgent, sessionInfo } from "../testing/agent.ts";
import { cliEnv, lvmh } from "../testing/cli.ts";

function assistant(id: string, input: number, output: number, cost: number, model: string) {
  return {
    message: {
      role: "assistant",
      id,
      text: "ok",
      thinking: null,
      toolCalls: [],
      toolCallId: null,
      usage: { inputTokens: input, outputTokens: output, totalCost: cost },
      model,
    },
  };
}
function user(id: string, by?: string) {
  return {
    message: { role: "user", id, text: "go", thinking: null, toolCalls: [], toolCallId: null },
    ...(by ? { from: { by } } : {}),
  };
}

Deno.test("GET /api/usage and /usage", async (t) => {
  await using d = await startDaemon({ env: { LVMH_DAILY_BUDGET: "$100", LVMH_BUDGET: "5" } });
  const a = await connectAgent(d, { sessionId: "u-a", session: sessionInfo("u-a", { repo: "team/app" }) });
  const b = await connectAgent(d, { sessionId: "u-b", session: sessionInfo("u-b", { model: "m-old" }) });
  try {
    // a: one run prompted by alice on two messages; b: a terminal run from an older plugin (agent_end only).
    a.send("agent_start");
    a.send("message_end", user("u1", "alice"));
    a.send("message_end", assistant("a1", 100, 10, 0.5, "m-big"));
    a.send("message_end", assistant("a2", 200, 20, 1.5, "m-big"));
    a.send("agent_end", { usage: { inputTokens: 300, outputTokens: 30, totalCost: 2 } });
    b.send("agent_start");
    b.send("message_end", user("u2"));
    b.send("agent_end", { usage: { inputTokens: 50, outputTokens: 5, totalCost: 0.25 } });
    const get = async (q: string) => {
      const res = await d.api(`/api/usage?${q}`);
      assert.equal(res.status, 200, await res.clone().text());
      assert.match(res.headers.get("content-type") ?? "", /json/);
      return await res.json() as Record<string, unknown>[];
    };
    await t.step("grouped five ways", async () => {
      // Both runs ended: each row counts its usage (a run still in the commit queue counts 0 so far).
      const byPerson = await waitFor(async () => {
        const rows = await get("by=person");
        return rows.length === 2 && rows.every((r) => (r.inputTokens as number) > 0) ? rows : null;
      }, "both runs stored");
      assert.deepEqual(byPerson, [
        { key: "alice", runs: 1, inputTokens: 300, outputTokens: 30, cost: 2 },
        { key: "terminal", runs: 1, inputTokens: 50, outputTokens: 5, cost: 0.25 },
      ]);
      assert.deepEqual((await get("by=repo")).map((r) => r.key), ["team/app", "(terminal)"]);
      assert.deepEqual((await get("by=model")).map((r) => r.key), ["m-big", "m-old"]);
      assert.deepEqual((await get("by=session")).map((r) => r.key), ["u-a", "u-b"]);
      const days = await get("by=day");
      assert.equal(days.length, 1);
      assert.equal(days[0].runs, 2);
      assert.equal(days[0].cost, 2.25);
      assert.deepEqual(await get("by=day&from=2001-01-01&to=2001-01-31"), []);
    });
    await t.step("bad queries are 400", async () => {
      for (
        const q of [
          "by=planet",
          "from=yesterday",
          "from=2026-01-02&to=2026-01-01",
          "from=2000-01-01&to=2026-01-01",
        ]
      ) {
        const res = await d.api(`/api/usage?${q}`);
        assert.equal(res.status, 400, q);
        assert.equal(typeof (await res.json()).error, "string");
      }
    });
    await t.step("lvmh usage --by repo --since 7d", async () => {
      const dir = await Deno.makeTempDir({ prefix: "lvmh-cli-" });
      try {
        const out = await lvmh(cliEnv(dir, d), ["usage", "--by", "repo", "--since", "7d"]);
        assert.equal(out.code, 0, out.stderr);
        assert.match(out.stdout, /^REPO\s+RUNS\s+INPUT\s+OUTPUT\s+COST/);
        assert.match(out.stdout, /team\/app\s+1\s+300\s+30\s+\$2\.0000/);
        assert.match(out.stdout, /total \$2\.25 since /);
        const json = await lvmh(cliEnv(dir, d), ["usage", "--by", "person", "--json"]);
        assert.equal(JSON.parse(json.stdout.split("\n")[0]).key, "alice");
        const bad = await lvmh(cliEnv(dir, d), ["usage", "--since", "week"]);
        assert.equal(bad.code, 2);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    });
    await t.step("the page: SVG bars per day, tables, budgets in force", async () => {
      const res = await d.api("/usage?days=7");
      assert.equal(res.status, 200);
      const html = await res.text();
      assert.match(html, /<svg[^>]*role="img"/);
      assert.match(html, /data-stack="team\/app"/);
      assert.match(html, /data-usage-total="true"><b>\$2\.25<\/b>/);
      assert.match(html, /Daily cap \(every session, UTC day\): \$2\.25 \/ \$100\.00/);
      assert.match(html, /Terminal sessions: \$5\.00, then ask/);
      const anonymous = await fetch(`${d.url}/usage`);
      assert.doesNotMatch(await anonymous.text(), /team\/app/, "no data without credentials");
    });
  } finally {
    await a.close();
    await b.close();
  }
});
