/**
 * Budgets end to end with the real pi 0.73.1 and 1.6.0, the real daemon and the fake LLM (which reports each
 * reply's token usage): an `ask` budget holds the next tool call on a budget card until approved (and a
 * rejected card stops the run), a `stop` budget aborts the run at once and refuses prompts with 409, the
 * daily cap stops two sessions at once, and a budget with what was spent survives a daemon SIGKILL and the
 * plugin's reconnect.
 */
import assert from "node:assert/strict";
import { freePort, startDaemon, waitFor } from "../../testing/daemon.ts";
import { startFakeLlm } from "../../testing/fixtures/fake_llm.mjs";
import { allEvents, assertInstalled, makePiHome, PI_VERSIONS, piRpc, sessions } from "../../testing/pi.ts";

type Ev = Record<string, unknown> & { seq: number; type: string };
type Api = { api(path: string, init?: RequestInit): Promise<Response> };

async function putBudget(d: Api, id: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await d.api(`/api/sessions/${id}/budget`, { method: "PUT", body: JSON.stringify(body) });
  assert.equal(res.status, 200, await res.clone().text());
  return await res.json();
}

async function getBudget(d: Api, id: string): Promise<Record<string, unknown>> {
  const res = await d.api(`/api/sessions/${id}/budget`);
  assert.equal(res.status, 200);
  return await res.json();
}

function prompt(d: Api, id: string, message: string): Promise<Response> {
  return d.api(`/api/sessions/${id}/prompt`, { method: "POST", body: JSON.stringify({ message }) });
}

/** Events after `after` once the run that follows has settled. */
function settledAfter(d: Api, id: string, after: number, what: string): Promise<Ev[]> {
  return waitFor(
    async () => {
      const evs = (await allEvents(d, id) as Ev[]).filter((e) => e.seq > after);
      return evs.some((e) => e.type === "agent_settled") ? evs : null;
    },
    what,
    30_000,
  );
}

async function pendingBudgetCard(d: Api, id: string, not: string[] = []): Promise<Record<string, unknown>> {
  return await waitFor(
    async () => {
      const res = await d.api(`/api/sessions/${id}/approvals`);
      const all = (await res.json()) as Record<string, unknown>[];
      return all.find((a) => a.state === "pending" && a.kind === "budget" && !not.includes(a.id as string));
    },
    "pending budget card",
    20_000,
  );
}

const lastSeq = async (d: Api, id: string) => ((await allEvents(d, id)).at(-1)?.seq as number) ?? 0;

for (const v of PI_VERSIONS) {
  Deno.test(`budget on pi ${v.name}: ask holds the next tool call; approving continues, rejecting stops`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using d = await startDaemon();
    await using home = await makePiHome(llm.url);
    await using _pi = piRpc(v, home, home.env(d));
    try {
      const id = (await waitFor(async () => (await sessions(d)).find((s) => s.online), "pi online"))
        .id as string;
      const set = await putBudget(d, id, { maxTokens: 1, onReach: "ask" });
      assert.deepEqual(set.spent, { cost: 0, tokens: 0 });
      assert.equal((await prompt(d, id, "please run the command")).status, 200);
      const card = await pendingBudgetCard(d, id);
      assert.equal(card.toolName, "budget");
      assert.match(String((card.args as { text: string }).text), /Budget reached: .* of 1 tokens/);
      const held = await allEvents(d, id) as Ev[];
      assert.ok(!held.some((e) => e.type === "tool_execution_end"), "the tool call waits on the card");
      // The daemon counted the first reply from the log: the budget is reached there too.
      assert.ok(((await getBudget(d, id)).spent as { tokens: number }).tokens >= 1);

      const ok = await d.api(`/api/approvals/${card.id}`, {
        method: "POST",
        body: JSON.stringify({ decision: "approve" }),
      });
      assert.equal(ok.status, 200, await ok.clone().text());
      // Approving raises the budget by its original size.
      assert.equal(
        ((await getBudget(d, id)).budget as { current: { maxTokens: number } }).current.maxTokens,
        2,
      );
      const ran = await waitFor(
        async () => (await allEvents(d, id) as Ev[]).find((e) => e.type === "tool_execution_end"),
        "the tool ran after the approval",
        20_000,
      );
      assert.match(String(ran.resultPreview), /hi/);
      // Still over (2 tokens): the next turn waits on a card of its own; rejecting it stops the run.
      const second = await pendingBudgetCard(d, id, [card.id as string]);
      const requests = llm.requests.length;
      const no = await d.api(`/api/approvals/${second.id}`, {
        method: "POST",
        body: JSON.stringify({ decision: "reject" }),
      });
      assert.equal(no.status, 200);
      const events = await settledAfter(d, id, 0, "the run ends");
      assert.equal(llm.requests.length, requests, "no model request after the rejected card");
      assert.ok(
        !events.some((e) => e.type === "message_end" && /^Done\./.test(String((e.message as Ev).text))),
      );
      assert.equal(events.filter((e) => e.type === "tool_execution_end").length, 1);
      const resolved = events.filter((e) => e.type === "approval_resolved").map((e) => e.decision);
      assert.deepEqual(resolved, ["approve", "reject"]);
    } finally {
      await llm.close();
    }
  });
}

for (const v of PI_VERSIONS) {
  Deno.test(`budget on pi ${v.name}: stop aborts the run at once, then prompts get 409 until raised`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using d = await startDaemon();
    await using home = await makePiHome(llm.url);
    await using _pi = piRpc(v, home, home.env(d));
    try {
      const id = (await waitFor(async () => (await sessions(d)).find((s) => s.online), "pi online"))
        .id as string;
      await putBudget(d, id, { maxTokens: 1, onReach: "stop" });
      assert.equal((await prompt(d, id, "please run the command")).status, 200);
      const events = await settledAfter(d, id, 0, "the run is aborted");
      assert.equal(llm.requests.length, 1, "one model request, then the run stopped");
      assert.ok(
        !events.some((e) => e.type === "tool_execution_end" && !e.isError),
        "the tool call did not run",
      );
      const refused = await prompt(d, id, "TEXTONLY again");
      assert.equal(refused.status, 409);
      assert.match((await refused.json()).error, /budget reached/);
      // Raised: prompts go in again and the run completes.
      await putBudget(d, id, { maxTokens: 1_000_000, onReach: "stop" });
      const after = await lastSeq(d, id);
      assert.equal((await prompt(d, id, "TEXTONLY again")).status, 200);
      const next = await settledAfter(d, id, after, "the raised run ends");
      assert.ok(
        next.some((e) => e.type === "message_end" && /You said/.test(String((e.message as Ev).text))),
      );
    } finally {
      await llm.close();
    }
  });
}

for (const v of PI_VERSIONS) {
  Deno.test(`budget on pi ${v.name}: the daily cap stops two running sessions at once`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using d = await startDaemon({ env: { LVMH_DAILY_BUDGET: "1t" } });
    await using homeA = await makePiHome(llm.url);
    await using homeB = await makePiHome(llm.url);
    await using _a = piRpc(v, homeA, homeA.env(d));
    await using _b = piRpc(v, homeB, homeB.env(d));
    try {
      const [a, b] = await waitFor(async () => {
        const list = await sessions(d);
        const a = list.find((s) => s.online && s.cwd === homeA.workspace);
        const b = list.find((s) => s.online && s.cwd === homeB.workspace);
        return a && b ? [a.id as string, b.id as string] : null;
      }, "both online");
      // A streams a slow reply (15 s); B's first reply reaches the cap while A still streams.
      assert.equal((await prompt(d, a, "SLOW please")).status, 200);
      await waitFor(async () => (await allEvents(d, a)).some((e) => e.type === "agent_start"), "A runs");
      const started = Date.now();
      assert.equal((await prompt(d, b, "please run the command")).status, 200);
      const evA = await settledAfter(d, a, 0, "A stopped");
      const evB = await settledAfter(d, b, 0, "B stopped");
      assert.ok(Date.now() - started < 10_000, "A stopped long before its reply would have ended");
      const endA = evA.find((e) => e.type === "message_end" && (e.message as Ev).role === "assistant");
      assert.ok(!/slow59/.test(String((endA?.message as Ev | undefined)?.text ?? "")), "A's reply was cut");
      assert.ok(!evB.some((e) => e.type === "tool_execution_end" && !e.isError), "B's tool did not run");
      for (const id of [a, b]) {
        const res = await prompt(d, id, "TEXTONLY more");
        assert.equal(res.status, 409);
        assert.match((await res.json()).error, /daily budget reached/);
      }
      const view = await getBudget(d, a);
      assert.ok(((view.daily as { spent: { tokens: number } }).spent.tokens) >= 1);
    } finally {
      await llm.close();
    }
  });
}

for (const v of PI_VERSIONS) {
  Deno.test(`budget on pi ${v.name}: the budget and what was spent survive a daemon SIGKILL and reconnect`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using home = await makePiHome(llm.url);
    const dataDir = await Deno.makeTempDir({ prefix: "lvmh-test-" });
    const port = freePort();
    let d = await startDaemon({ dataDir, port });
    await using pi = piRpc(v, home, home.env(d));
    try {
      const id = (await waitFor(async () => (await sessions(d)).find((s) => s.online), "pi online"))
        .id as string;
      assert.equal((await prompt(d, id, "TEXTONLY first")).status, 200);
      await settledAfter(d, id, 0, "first run");
      const spent = (await getBudget(d, id)).spent as { tokens: number };
      assert.ok(spent.tokens > 0, "the reply's usage was counted");
      await putBudget(d, id, { maxTokens: spent.tokens, onReach: "stop" });
      assert.equal((await d.kill("SIGKILL")).signal, "SIGKILL");
      d = await startDaemon({ dataDir, port });
      const after = await getBudget(d, id);
      assert.deepEqual(after.spent, spent, "recomputed from the log, not reset");
      assert.equal((after.budget as { maxTokens: number }).maxTokens, spent.tokens);
      assert.match(String(after.reached), /budget reached/);
      await waitFor(async () => (await sessions(d)).find((s) => s.id === id && s.online), "plugin back");
      assert.equal((await prompt(d, id, "TEXTONLY again")).status, 409);
      // The plugin learnt the budget and the daemon's count in its new welcome: a prompt typed into pi
      // itself is stopped too.
      const seq = await lastSeq(d, id);
      await pi.command({ type: "prompt", message: "TEXTONLY from the terminal" });
      const evs = await settledAfter(d, id, seq, "the terminal's run is stopped");
      assert.ok(
        !evs.some((e) => e.type === "message_end" && /You said/.test(String((e.message as Ev).text))),
      );
    } finally {
      await d.stop();
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
      await llm.close();
    }
  });
}
