/**
 * `GET /api/search` on a real daemon: roles and parameters, hostile queries, a hit findable the moment its
 * event is readable, a database indexed at start, deleted sessions gone from the results.
 */
import assert from "node:assert/strict";
import { startInProcess } from "../testing/inproc.ts";
import { connectAgent, sessionInfo, userEnd } from "../testing/agent.ts";
import { waitFor } from "../testing/daemon.ts";
import { Store } from "../lib/store.ts";
import type { AgentEvent, SearchPage, SessionInfo } from "../lib/protocol.ts";

const search = async (api: (p: string) => Promise<Response>, params: Record<string, string>) => {
  const res = await api(`/api/search?${new URLSearchParams(params)}`);
  assert.equal(res.status, 200, await res.clone().text());
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
  return await res.json() as SearchPage;
};

Deno.test("GET /api/search", async (t) => {
  await using d = await startInProcess();
  const agent = await connectAgent(d, { sessionId: "search-s1" });
  const asViewer = async (path: string, token: string) =>
    await d.fetch(path, { headers: { authorization: `Bearer ${token}` } });
  const add = async (name: string, role: string) => {
    const res = await d.api("/api/tokens", { method: "POST", body: JSON.stringify({ name, role }) });
    return (await res.json()).token as string;
  };
  const viewer = await add("vera", "viewer");
  const gone = await add("gone", "viewer");
  await (await d.api("/api/tokens/gone", { method: "DELETE" })).body?.cancel();

  await t.step("a hit is findable the moment its event is readable", async () => {
    for (let i = 0; i < 20; i++) {
      const seq = agent.send("message_end", userEnd(`m${i}`, `findme${i} in the haystack`));
      await waitFor(async () => {
        const res = await d.api(`/api/sessions/search-s1/events?after=${seq - 1}&limit=1`);
        return (await res.json()).length === 1 || undefined;
      }, `event ${seq} readable`);
      const page = await search(d.api, { q: `findme${i}` });
      assert.deepEqual(page.hits.map((h) => [h.sessionId, h.seq, h.type, h.role]), [
        ["search-s1", seq, "prompt", "user"],
      ]);
      assert.equal(page.hits[0].snippet, `«findme${i}» in the haystack`);
    }
  });

  await t.step("a viewer can search; a revoked token cannot", async () => {
    const res = await asViewer("/api/search?q=haystack&limit=5", viewer);
    assert.equal(res.status, 200);
    const page = await res.json() as SearchPage;
    assert.equal(page.hits.length, 5);
    assert.ok(page.next);
    const more = await asViewer(
      `/api/search?q=haystack&limit=100&before=${encodeURIComponent(page.next)}`,
      viewer,
    );
    assert.equal((await more.json() as SearchPage).hits.length, 15);
    const refused = await asViewer("/api/search?q=haystack", gone);
    assert.equal(refused.status, 401);
    await refused.body?.cancel();
  });

  await t.step("400 on bad parameters", async () => {
    for (
      const query of [
        "",
        "?limit=5",
        "?q=a&limit=0",
        "?q=a&limit=101",
        "?q=a&limit=x",
        "?q=a&type=thinking",
        "?q=a&sessionId=" + encodeURIComponent("../x"),
        "?q=a&before=not-a-cursor",
        `?q=${"a".repeat(20_001)}`,
      ]
    ) {
      const res = await d.api(`/api/search${query}`);
      assert.equal(res.status, 400, query.slice(0, 80));
      assert.equal(typeof (await res.json()).error, "string");
    }
  });

  await t.step("a hostile query never errors", async () => {
    for (
      const q of [
        '"unbalanced',
        "NEAR(",
        "*",
        "-",
        "a OR b",
        "x".repeat(10_000),
        "\u0000\u0007\u001b",
        "{}:^",
      ]
    ) {
      const page = await search(d.api, { q });
      assert.ok(Array.isArray(page.hits));
    }
    assert.equal((await search(d.api, { q: '"in the haystack" -findme3', limit: "100" })).hits.length, 19);
    assert.equal((await search(d.api, { q: "findme1*", limit: "100" })).hits.length, 11);
  });

  await t.step("filters by session and type", async () => {
    agent.send("tool_execution_start", {
      toolCallId: "t1",
      toolName: "bash",
      args: { command: "grep haystack" },
    });
    const seq = agent.send("tool_execution_end", {
      toolCallId: "t1",
      toolName: "bash",
      isError: false,
      resultPreview: "haystack.txt:1",
    });
    await waitFor(() => d.daemon.app.store.lastSeq("search-s1") >= seq || undefined, "tool events stored");
    const tools = await search(d.api, { q: "haystack", type: "tool" });
    assert.deepEqual(tools.hits.map((h) => [h.type, h.toolName]), [["tool", "bash"], ["tool", "bash"]]);
    assert.equal((await search(d.api, { q: "haystack", sessionId: "search-nobody" })).hits.length, 0);
  });

  await t.step("a deleted session vanishes from the results", async () => {
    await agent.close();
    await waitFor(() => !d.daemon.app.sessions.isOnline("search-s1") || undefined, "session offline");
    const del = await d.api("/api/sessions/search-s1", { method: "DELETE" });
    assert.equal(del.status, 200, await del.text());
    assert.deepEqual((await search(d.api, { q: "haystack" })).hits, []);
  });
});

Deno.test("search: a database with events from before the index is indexed at start, ingest going on", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-search-old-" });
  try {
    const old = new Store(`${dataDir}/lvmh.db`, { search: false });
    old.upsertSession(sessionInfo("search-old", { name: "archived night" }) as SessionInfo);
    const events: AgentEvent[] = [];
    for (let seq = 1; seq <= 3000; seq++) {
      events.push(
        {
          v: 1,
          sessionId: "search-old",
          seq,
          ts: seq,
          type: "message_end",
          ...userEnd(`m${seq}`, `ancient ${seq}`),
        } as AgentEvent,
      );
    }
    old.appendBatch(events);
    old.close();
    await using d = await startInProcess({ dataDir });
    // Sessions are searchable at once; new events are indexed as they come, while the old ones catch up.
    assert.equal((await search(d.api, { q: "archived" })).hits[0]?.type, "session");
    const agent = await connectAgent(d, { sessionId: "search-new" });
    const seq = agent.send("message_end", userEnd("n1", "ancient but new"));
    await waitFor(() => d.daemon.app.store.lastSeq("search-new") >= seq || undefined, "new event stored");
    assert.equal((await search(d.api, { q: '"but new"' })).hits.length, 1);
    await waitFor(() => /search: indexed the earlier events/.test(d.output()) || undefined, "backfill done");
    assert.match(d.output(), /search: indexing the events stored before the index existed/);
    assert.equal((await search(d.api, { q: '"ancient 2999"' })).hits[0]?.seq, 2999);
    // The new event is indexed too, behind ingest: every event once.
    const docs = () =>
      (d.daemon.app.store.db.prepare("SELECT count(*) AS n FROM search_fts WHERE kind = 'prompt'").get() as {
        n: number;
      }).n;
    await waitFor(() => docs() === 3001 || undefined, "the new event indexed");
    assert.equal(d.daemon.app.store.search!.lag(), null);
    await agent.close();
  } finally {
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
