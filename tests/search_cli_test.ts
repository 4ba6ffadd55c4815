/** `lvmh search` and `lvmh export` (the built cli/lvmh.mjs on Node) against an in-process daemon. */
import assert from "node:assert/strict";
import { startInProcess } from "../testing/inproc.ts";
import { connectAgent, userEnd } from "../testing/agent.ts";
import { waitFor } from "../testing/daemon.ts";
import { cliEnv, lvmh } from "../testing/cli.ts";

Deno.test("lvmh search and lvmh export", async (t) => {
  await using d = await startInProcess();
  const configDir = await Deno.makeTempDir({ prefix: "lvmh-cli-search-" });
  const agent = await connectAgent(d, { sessionId: "cli-find" });
  try {
    agent.send("agent_start");
    agent.send("message_end", userEnd("u1", "rotate the staging certificates"));
    const last = agent.send("agent_end", { usage: { inputTokens: 3, outputTokens: 4, totalCost: 0 } });
    await waitFor(() => d.daemon.app.store.lastSeq("cli-find") >= last || undefined, "stored");
    const env = cliEnv(configDir, d);

    await t.step("search prints the hits, --json one per line", async () => {
      const table = await lvmh(env, ["search", "certificate*"]);
      assert.equal(table.code, 0, table.stderr);
      assert.match(table.stdout, /^SESSION\s+SEQ\s+KIND\s+WHEN\s+TEXT\n/);
      assert.match(table.stdout, /cli-find\s+2\s+prompt\s+.*rotate the staging «certificates»/);
      const json = await lvmh(env, ["search", '"staging certificates"', "--session", "cli-find", "--json"]);
      assert.equal(json.code, 0, json.stderr);
      const hits = json.stdout.trimEnd().split("\n").map((l) => JSON.parse(l));
      assert.deepEqual(hits.map((h) => [h.sessionId, h.seq, h.type]), [["cli-find", 2, "prompt"]]);
      const none = await lvmh(env, ["search", "nothinglikethis"]);
      assert.equal(none.stdout, "no hits\n");
      const bad = await lvmh(env, ["search", "x", "--type", "nope"]);
      assert.equal(bad.code, 2);
    });

    await t.step("a prompt from the CLI is labelled as the CLI's; the session's runs say so", async () => {
      const sent = await lvmh(env, ["prompt", "cli-find", "from the terminal tool"]);
      assert.equal(sent.code, 0, sent.stderr);
      const frame = await agent.waitFrame((f) => f.type === "prompt", "the prompt frame");
      assert.equal(frame.source, "cli");
      // The plugin puts the prompt's `from` on the user message, as the real one does (plugin/src/origins.ts).
      agent.send("agent_start");
      agent.send("message_end", {
        ...userEnd("u2", "from the terminal tool"),
        from: { promptId: frame.promptId, by: frame.by, source: frame.source },
      });
      const last = agent.send("agent_end", {});
      await waitFor(() => d.daemon.app.store.lastSeq("cli-find") >= last || undefined, "stored");
      const runs = await (await d.api("/api/sessions/cli-find/runs")).json();
      assert.deepEqual(runs[0].prompt, { text: "from the terminal tool", by: frame.by, source: "cli" });
      const web = await d.api("/api/sessions/cli-find/prompt", {
        method: "POST",
        body: JSON.stringify({ message: "from a page" }),
      });
      assert.equal(web.status, 200, await web.text());
      const second = await agent.waitFrame((f) => f.type === "prompt" && f.message === "from a page");
      assert.equal(second.source, "web");
    });

    await t.step("export writes the session to stdout", async () => {
      const md = await lvmh(env, ["export", "cli-find"]);
      assert.equal(md.code, 0, md.stderr);
      assert.match(md.stdout, /^# /);
      assert.match(md.stdout, /> rotate the staging certificates/);
      const jsonl = await lvmh(env, ["export", "cli-find", "--format", "jsonl"]);
      const events = await (await d.api("/api/sessions/cli-find/events?after=0")).json();
      assert.deepEqual(jsonl.stdout.trimEnd().split("\n").map((l) => JSON.parse(l)), events);
      const missing = await lvmh(env, ["export", "nobody"]);
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /does not exist/);
    });
  } finally {
    await agent.close();
    await Deno.remove(configDir, { recursive: true });
  }
});
