import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { Store } from "../store.ts";
import type { AgentEvent, SessionInfo } from "../protocol.ts";
import { sessionInfo } from "../../testing/agent.ts";
import { parseQuery } from "./query.ts";

const info = (id: string, extra = {}) => sessionInfo(id, extra) as SessionInfo;
let clock = 1000;
const msg = (sessionId: string, seq: number, role: string, text: string, thinking: string | null = null) =>
  ({
    v: 1,
    sessionId,
    seq,
    ts: clock++,
    type: "message_end",
    message: { role, id: `m${seq}`, text, thinking, toolCalls: [], toolCallId: null },
  }) as AgentEvent;
const toolStart = (sessionId: string, seq: number, toolName: string, args: unknown) =>
  ({
    v: 1,
    sessionId,
    seq,
    ts: clock++,
    type: "tool_execution_start",
    toolCallId: `t${seq}`,
    toolName,
    args,
  }) as AgentEvent;
const toolEnd = (sessionId: string, seq: number, toolName: string, resultPreview: string) =>
  ({
    v: 1,
    sessionId,
    seq,
    ts: clock++,
    type: "tool_execution_end",
    toolCallId: `t${seq}`,
    toolName,
    isError: false,
    resultPreview,
  }) as AgentEvent;

async function withStore(fn: (store: Store, path: string) => void | Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-search-" });
  const store = new Store(`${dir}/lvmh.db`);
  try {
    await fn(store, `${dir}/lvmh.db`);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** Run the indexer's steps until the index has caught up with the events. */
const indexAll = (store: Store) => {
  while (store.search!.indexStep(100)) { /* next step */ }
};
const find = (store: Store, q: string, extra = {}) => store.search!.search({ q, limit: 20, ...extra });
const seqs = (store: Store, q: string, extra = {}) =>
  find(store, q, extra).hits.map((h) => [h.sessionId, h.seq]);

Deno.test("SqliteSearch finds messages, thinking, tool arguments and results as soon as they are stored", () =>
  withStore((store) => {
    store.upsertSession(info("a"));
    store.appendBatch([
      msg("a", 1, "user", "please deploy the staging cluster"),
      msg("a", 2, "assistant", "Deploying now.", "the kubeconfig lives in ~/.kube"),
      toolStart("a", 3, "bash", { command: "kubectl apply -f deploy/staging.yaml", timeout: 30 }),
      toolEnd("a", 4, "bash", "deployment.apps/web configured"),
      msg("a", 5, "toolResult", "deployment.apps/web configured"),
    ]);
    assert.deepEqual(new Set(seqs(store, "staging").map((s) => s[1])), new Set([1, 3]));
    assert.deepEqual(seqs(store, "kubeconfig"), [["a", 2]]);
    assert.deepEqual(seqs(store, "configured"), [["a", 4]], "a tool result is indexed once, not twice");
    const hit = find(store, "kubectl").hits[0];
    assert.equal(hit.type, "tool");
    assert.equal(hit.toolName, "bash");
    assert.equal(hit.seq, 3);
    assert.match(hit.snippet, /«kubectl»/);
    const prompt = find(store, "cluster").hits[0];
    assert.deepEqual([prompt.type, prompt.role], ["prompt", "user"]);
  }));

Deno.test("SqliteSearch reads phrases, prefixes and exclusions; filters by session and type", () =>
  withStore((store) => {
    store.upsertSession(info("a"));
    store.upsertSession(info("b"));
    store.appendBatch([
      msg("a", 1, "user", "the merge request is ready"),
      msg("a", 2, "assistant", "request to merge later"),
      msg("b", 1, "user", "deployment failed on merge"),
      toolEnd("b", 2, "bash", "deploying merge bot"),
    ]);
    assert.deepEqual(seqs(store, '"merge request"'), [["a", 1]]);
    assert.deepEqual(new Set(seqs(store, "deploy*").map(String)), new Set(["b,1", "b,2"]));
    assert.deepEqual(seqs(store, "merge -request"), seqs(store, "merge", { sessionId: "b" }));
    assert.deepEqual(seqs(store, "merge", { sessionId: "a", type: "prompt" }), [["a", 1]]);
    assert.deepEqual(seqs(store, "merge", { type: "tool" }), [["b", 2]]);
    assert.deepEqual(
      new Set(seqs(store, "merge", { type: "message" }).map(String)),
      new Set(["a,1", "a,2", "b,1"]),
    );
  }));

Deno.test("SqliteSearch ranks the closer match first and pages with an opaque cursor", () =>
  withStore((store) => {
    store.upsertSession(info("a"));
    const filler = "lorem ipsum dolor sit amet ".repeat(40);
    const events = [msg("a", 1, "assistant", `${filler} needle ${filler}`)];
    for (let seq = 2; seq <= 25; seq++) events.push(msg("a", seq, "assistant", `${filler} needle ${seq}`));
    events.push(msg("a", 26, "assistant", "needle needle needle"));
    store.appendBatch(events);
    const first = find(store, "needle", { limit: 10 });
    assert.equal(first.hits[0].seq, 26);
    assert.equal(first.hits.length, 10);
    assert.ok(first.next);
    const all = [...first.hits];
    let next: string | undefined = first.next;
    while (next) {
      // An event stored meanwhile does not shift the pages of a search already under way.
      store.appendBatch([msg("a", 100 + all.length, "assistant", "needle again")]);
      const page = find(store, "needle", { limit: 10, cursor: next });
      all.push(...page.hits);
      next = page.next;
    }
    assert.equal(all.length, 26);
    assert.equal(new Set(all.map((h) => h.seq)).size, 26);
    assert.throws(() => find(store, "needle", { cursor: "nonsense" }), /not a cursor/);
  }));

Deno.test("SqliteSearch never fails on hostile queries", () =>
  withStore((store) => {
    store.upsertSession(info("a"));
    store.appendBatch([msg("a", 1, "user", 'quote " and NEAR(x y) and col:umn and «marks» here')]);
    const hostile = [
      '"unbalanced',
      "NEAR(",
      "*",
      "-",
      "col:umn",
      "a OR b AND NOT c",
      "x".repeat(10_000),
      "word ".repeat(2000),
      "\u0000\u0007\u001b[31m",
      "^start",
      "{a b}",
      "'; DROP TABLE events; --",
      "\ud800",
    ];
    for (const q of hostile) assert.ok(Array.isArray(find(store, q).hits), q);
    assert.equal(find(store, "NEAR(").hits.length, 1);
    const hit = find(store, "marks").hits[0];
    // The text's own guillemets never pass for a highlight.
    assert.match(hit.snippet, /‹«marks»›/);
  }));

Deno.test("SqliteSearch indexes session names, cwd and repo, and a rename replaces them", () =>
  withStore((store) => {
    store.upsertSession(info("a", { name: "nightly refactor", cwd: "/srv/payments", repo: "acme/payments" }));
    assert.deepEqual(seqs(store, "refactor"), [["a", 0]]);
    assert.equal(find(store, "payments").hits[0].type, "session");
    store.upsertSession(info("a", { name: "weekly cleanup", cwd: "/srv/payments" }));
    assert.deepEqual(seqs(store, "refactor"), []);
    store.appendBatch([
      { v: 1, sessionId: "a", seq: 1, ts: 5, type: "session_info", session: info("a", { name: "renamed" }) },
    ] as AgentEvent[]);
    assert.deepEqual(seqs(store, "renamed"), [["a", 0]]);
    assert.deepEqual(seqs(store, "cleanup"), []);
  }));

Deno.test("SqliteSearch forgets a deleted session's rows", () =>
  withStore((store, path) => {
    store.upsertSession(info("a"));
    store.upsertSession(info("b"));
    store.appendBatch([msg("a", 1, "user", "shared word"), msg("b", 1, "user", "shared word")]);
    indexAll(store);
    store.deleteSession("a");
    assert.deepEqual(seqs(store, "shared"), [["b", 1]]);
    const db = new DatabaseSync(path);
    try {
      const left = db.prepare("SELECT count(*) AS n FROM search_fts WHERE sessionId = 'a'").get() as {
        n: number;
      };
      assert.equal(left.n, 0);
      const kept = db.prepare("SELECT count(*) AS n FROM search_fts WHERE sessionId = 'b'").get() as {
        n: number;
      };
      assert.equal(kept.n, 2, "b's message and b's own row");
      // The FTS index itself holds no row of it either (its integrity check compares it with the docs).
      db.exec("INSERT INTO search_fts(search_fts, rank) VALUES ('integrity-check', 1)");
    } finally {
      db.close();
    }
  }));

Deno.test("SqliteSearch indexes a database that predates it, step by step, with ingest going on", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-search-" });
  try {
    const old = new Store(`${dir}/lvmh.db`, { search: false });
    old.upsertSession(info("a", { name: "legacy" }));
    const events = [];
    for (let seq = 1; seq <= 250; seq++) events.push(msg("a", seq, "user", `old event ${seq} oldword`));
    old.appendBatch(events);
    old.close();
    const store = new Store(`${dir}/lvmh.db`);
    try {
      assert.deepEqual(seqs(store, "legacy"), [["a", 0]], "sessions are indexed at once");
      assert.deepEqual(store.search!.lag(), { upto: 0, top: 250 });
      assert.equal(find(store, "oldword", { limit: 100 }).hits.length, 100, "found before they are indexed");
      store.appendBatch([msg("a", 251, "user", "new oldword")]);
      assert.deepEqual(seqs(store, "oldword", { limit: 1 }), [["a", 251]], "the newest first");
      let steps = 0;
      while (store.search!.indexStep(100)) steps++;
      assert.equal(steps, 2, "251 events in steps of 100");
      assert.equal(store.search!.lag(), null);
      assert.equal(find(store, "oldword", { limit: 100 }).next !== undefined, true);
      const count = (store.db.prepare("SELECT count(*) AS n FROM search_fts WHERE kind = 'prompt'").get() as {
        n: number;
      }).n;
      assert.equal(count, 251, "every event once");
    } finally {
      store.close();
    }
    // Reopened: nothing left to do, nothing indexed twice.
    const again = new Store(`${dir}/lvmh.db`);
    try {
      assert.equal(again.search!.lag(), null);
      assert.equal(again.search!.search({ q: '"event 7"', limit: 5 }).hits.length, 1);
    } finally {
      again.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("SqliteSearch: events past the index are matched by the index's own rules", () =>
  withStore((store) => {
    store.upsertSession(info("a"));
    const texts = [
      "Deploy the branch to staging",
      "deployment failed: lib/store.ts line 42",
      "Café déjà vu résumé naïve",
      "cafe deja vu resume naive",
      "Ελληνικά κείμενα με τόνους",
      "漢字のテキスト and 한국어",
      "snake_case camelCase kebab-case v1.2.3 x86_64",
      "fix the error, then run the test again",
      "the error was fixed; tests run",
      "ÉCOLE Straße ﬁle",
    ];
    store.appendBatch(
      texts.map((t, i) => msg("a", i + 1, i % 2 ? "assistant" : "user", t, i === 2 ? "deploy" : null)),
    );
    const queries = [
      "deploy",
      "deploy*",
      "Deploy -staging",
      '"lib/store"',
      "store.ts",
      "cafe",
      "CAFÉ",
      "deja*",
      "naïve",
      "τόνους",
      "τονους",
      "漢字のテキスト",
      "한국어",
      "snake_case",
      "camel*",
      "kebab-case",
      "1.2.3",
      "x86",
      '"the error"',
      '"error was"*',
      '"run the" -fixed',
      "ecole",
      "strasse",
      "straße",
      "file",
      "e*",
      '"',
      "-error",
    ];
    const unindexed = queries.map((q) => find(store, q, { limit: 100 }).hits.map((h) => h.seq).sort());
    indexAll(store);
    const indexed = queries.map((q) => find(store, q, { limit: 100 }).hits.map((h) => h.seq).sort());
    for (const [i, q] of queries.entries()) assert.deepEqual(unindexed[i], indexed[i], `query ${q}`);
    assert.ok(indexed.some((h) => h.length > 1), "the queries find something");
  }));

Deno.test("SqliteSearch: new events after the newest session was deleted are indexed (rowids reused)", () =>
  withStore((store) => {
    store.upsertSession(info("a"));
    store.upsertSession(info("b"));
    store.appendBatch([
      msg("a", 1, "user", "first"),
      msg("b", 1, "user", "newest"),
      msg("b", 2, "user", "too"),
    ]);
    indexAll(store);
    store.deleteSession("b");
    store.appendBatch([msg("a", 2, "user", "after the delete reused")]);
    indexAll(store);
    const count = (store.db.prepare("SELECT count(*) AS n FROM search_fts WHERE kind = 'prompt'").get() as {
      n: number;
    }).n;
    assert.equal(count, 2, "a's two events, each once");
    assert.deepEqual(seqs(store, "reused"), [["a", 2]]);
  }));

Deno.test("parseQuery() output is accepted by FTS5 for every hostile input", () => {
  const db = new DatabaseSync(":memory:");
  db.exec("CREATE VIRTUAL TABLE t USING fts5(body)");
  for (const q of ['"a', "NEAR(", 'x""y', "-a b", "a* b*", "\u00e9t\u00e9*", "c:d", "(", ")", "{x}", "^a"]) {
    const match = parseQuery(q).match;
    if (match) db.prepare("SELECT * FROM t WHERE t MATCH ?").all(match);
  }
  db.close();
});

Deno.test("SqliteSearch indexes every event of a large batch over many sessions, replays once", () =>
  withStore((store) => {
    const events = [];
    for (const id of ["a", "b", "c"]) {
      store.upsertSession(info(id));
      for (let seq = 1; seq <= 70; seq++) events.push(msg(id, seq, "user", `bulk ${id} ${seq}`));
    }
    store.appendBatch(events);
    store.appendBatch([msg("a", 5, "user", "bulk replay"), msg("a", 71, "user", "bulk a 71")]);
    indexAll(store);
    const count = (where: string) =>
      (store.db.prepare(`SELECT count(*) AS n FROM search_fts WHERE kind = 'prompt'${where}`).get() as {
        n: number;
      })
        .n;
    assert.equal(count(""), 211);
    assert.equal(count(" AND sessionId = 'b'"), 70);
    assert.deepEqual(seqs(store, '"bulk c 69"'), [["c", 69]]);
    assert.deepEqual(seqs(store, "replay"), [], "a replayed seq is not indexed again");
  }));

Deno.test("SqliteSearch pages across the events past the index and the index's own hits, each hit once", () =>
  withStore((store) => {
    store.upsertSession(info("a"));
    store.appendBatch(Array.from({ length: 12 }, (_, i) => msg("a", i + 1, "user", `pager old ${i + 1}`)));
    indexAll(store);
    store.appendBatch(Array.from({ length: 7 }, (_, i) => msg("a", i + 13, "user", `pager new ${i + 13}`)));
    const seen: number[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = find(store, "pager", { limit: 3, ...(cursor ? { cursor } : {}) });
      seen.push(...page.hits.map((h) => h.seq));
      cursor = page.next;
      pages++;
      // Indexing between pages moves nothing: the cursor keeps the first page's view.
      if (pages === 2) indexAll(store);
    } while (cursor && pages < 20);
    assert.deepEqual(seen.slice(0, 7), [19, 18, 17, 16, 15, 14, 13], "the unindexed newest first");
    assert.deepEqual([...seen].sort((a, b) => a - b), Array.from({ length: 19 }, (_, i) => i + 1));
    assert.equal(pages, 7);
  }));
