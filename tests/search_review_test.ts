/**
 * A session read as its runs, and exported, on a real daemon with a scripted plugin: `GET
 * /api/sessions/:id/runs` and `GET /api/sessions/:id/export` as Markdown, JSONL (equal to `/events`) and HTML
 * (no script element, no event handler, every text escaped).
 */
import assert from "node:assert/strict";
import { startInProcess } from "../testing/inproc.ts";
import { connectAgent, sessionInfo, userEnd } from "../testing/agent.ts";
import { waitFor } from "../testing/daemon.ts";
import type { RunSummary } from "../lib/protocol.ts";

const assistant = (id: string, text: string, stopReason = "stop", errorMessage?: string) => ({
  message: {
    role: "assistant",
    id,
    text,
    thinking: null,
    toolCalls: [],
    toolCallId: null,
    stopReason,
    errorMessage,
  },
});

Deno.test("GET /api/sessions/:id/runs and /export", async (t) => {
  await using d = await startInProcess();
  const agent = await connectAgent(d, {
    sessionId: "review-1",
    session: sessionInfo("review-1", { name: 'Fix <b>login</b> & "quotes"' }),
  });
  agent.send("agent_start");
  agent.send("message_end", userEnd("u1", "run the tests <script>alert(1)</script>"));
  agent.send("tool_execution_start", {
    toolCallId: "t1",
    toolName: "bash",
    args: { command: "echo ```x```" },
  });
  agent.send("tool_execution_end", {
    toolCallId: "t1",
    toolName: "bash",
    isError: false,
    resultPreview: '<img src=x onerror="alert(1)">',
  });
  agent.send("message_end", assistant("a1", "All **green**. <img src=y onerror=alert(2)>"));
  agent.send("agent_end", { usage: { inputTokens: 1200, outputTokens: 300, totalCost: 0.0123 } });
  agent.send("agent_start");
  agent.send("message_end", {
    ...userEnd("u2", "now deploy"),
    from: { promptId: "p2", by: "hook:gitlab" },
  });
  agent.send("message_end", assistant("a2", "", "error", "provider said no"));
  const last = agent.send("agent_end", { usage: { inputTokens: 10, outputTokens: 0, totalCost: 0 } });
  await waitFor(() => d.daemon.app.store.lastSeq("review-1") >= last || undefined, "events stored");

  await t.step("runs, newest first", async () => {
    const res = await d.api("/api/sessions/review-1/runs");
    assert.equal(res.status, 200);
    const runs = await res.json() as RunSummary[];
    assert.deepEqual(runs.map((r) => [r.state, r.prompt?.source, r.prompt?.text]), [
      ["failed", "hook", "now deploy"],
      ["done", "terminal", "run the tests <script>alert(1)</script>"],
    ]);
    assert.equal(runs[0].error, "provider said no");
    assert.deepEqual(runs[1].tools, { bash: 1 });
    assert.deepEqual(runs[1].usage, { inputTokens: 1200, outputTokens: 300, totalCost: 0.0123 });
    assert.equal((await d.api("/api/sessions/review-1/runs?limit=0")).status, 400);
    assert.equal((await d.api("/api/sessions/nobody/runs")).status, 404);
  });

  await t.step(
    "Markdown: the conversation, tool calls fenced, outputs collapsed, costs per run",
    async () => {
      const res = await d.api("/api/sessions/review-1/export?format=md");
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type")!, /^text\/markdown/);
      assert.equal(res.headers.get("content-disposition"), 'attachment; filename="fix-b-login-b-quotes.md"');
      const md = await res.text();
      assert.match(md, /^# Fix <b>login<\/b> & "quotes"\n/);
      assert.match(md, /## Run 1 ·/);
      assert.match(md, /\*\*Prompt\*\* \(terminal\):\n\n> run the tests/);
      // The fence is longer than the backticks inside the arguments.
      assert.match(md, /\n```` bash\n\{\n {2}"command": "echo ```x```"\n\}\n````\n/);
      assert.match(md, /<details><summary>Output of bash<\/summary>/);
      assert.match(md, /\*Run ended: 1200 input and 300 output tokens, \$0\.0123\.\*/);
      assert.match(md, /\*\*Prompt\*\* \(hook:gitlab, hook\)/);
      assert.match(md, /> \*\*Error:\*\* provider said no/);
    },
  );

  await t.step("JSONL: the stored events, exactly as /events gives them", async () => {
    const res = await d.api("/api/sessions/review-1/export?format=jsonl");
    assert.equal(res.status, 200);
    const lines = (await res.text()).trimEnd().split("\n").map((l) => JSON.parse(l));
    const events = await (await d.api("/api/sessions/review-1/events?after=0")).json();
    assert.deepEqual(lines, events);
  });

  await t.step("HTML: self-contained, no script, no event handler, text escaped", async () => {
    const res = await d.api("/api/sessions/review-1/export?format=html");
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type")!, /^text\/html/);
    const html = await res.text();
    assert.doesNotMatch(html, /<script/i);
    assert.doesNotMatch(html, /<[^>]+\son\w+\s*=/i);
    assert.doesNotMatch(html, /<(link|iframe|object|embed|img)\b/i);
    assert.match(html, /&#60;script&#62;alert\(1\)&#60;\/script&#62;/);
    assert.match(html, /<title>Fix &#60;b&#62;login&#60;\/b&#62; &#38; &#34;quotes&#34; · lvmh<\/title>/);
    assert.match(html, /<style>/);
    // Answers read as on the page: its Markdown rendering, raw HTML in them shown as text.
    assert.match(html, /All <strong>green<\/strong>\. &lt;img src=y onerror=alert\(2\)&gt;/);
  });

  await t.step("400 for an unknown format", async () => {
    const res = await d.api("/api/sessions/review-1/export?format=pdf");
    assert.equal(res.status, 400);
    await res.body?.cancel();
  });
  await agent.close();
});
