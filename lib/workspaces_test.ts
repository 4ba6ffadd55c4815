import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { workspaceBranch, Workspaces, workVolumeName } from "./workspaces.ts";

async function withDb(fn: (db: DatabaseSync, path: string) => void | Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-workspaces-" });
  const db = new DatabaseSync(`${dir}/lvmh.db`);
  try {
    await fn(db, `${dir}/lvmh.db`);
  } finally {
    db.close();
    await Deno.remove(dir, { recursive: true });
  }
}

const SHA_A = "a".repeat(40), SHA_B = "b".repeat(40);
const ID = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

Deno.test("workspaces: branch lvmh/ + the first 8 hex digits of the id, volume lvmh-work-<id>", () => {
  assert.equal(workspaceBranch(ID), "lvmh/0f1e2d3c");
  assert.equal(workspaceBranch("AB-CD-EF01-23"), "lvmh/abcdef01");
  assert.equal(workVolumeName(ID), `lvmh-work-${ID}`);
});

Deno.test("workspaces: recorded once (a second record keeps the first), kept across reopening, deleted", () =>
  withDb((db, path) => {
    const w = new Workspaces(db);
    assert.equal(w.get(ID), undefined);
    const start = { repo: "g/p", baseBranch: "main", baseSha: SHA_A, branch: workspaceBranch(ID) };
    w.record(ID, start, 1000);
    w.record(ID, { ...start, baseBranch: "dev", baseSha: SHA_B }, 2000);
    const want = { sessionId: ID, ...start, createdAt: 1000 };
    assert.deepEqual(w.get(ID), want);
    const again = new DatabaseSync(path);
    try {
      assert.deepEqual(new Workspaces(again).get(ID), want, "a restarted daemon reads the same record");
    } finally {
      again.close();
    }
    w.record("other", { ...start, branch: "lvmh/other000" });
    w.sessionDeleted(ID);
    assert.equal(w.get(ID), undefined);
    assert.equal(w.get("other")?.repo, "g/p", "other sessions keep theirs");
  }));

Deno.test("workspaces: a base that is not a full sha, or an empty field, is refused", () =>
  withDb((db) => {
    const w = new Workspaces(db);
    const start = { repo: "g/p", baseBranch: "main", baseSha: SHA_A, branch: "lvmh/0f1e2d3c" };
    assert.throws(() => w.record(ID, { ...start, baseSha: "abc" }));
    assert.throws(() => w.record(ID, { ...start, repo: "" }));
    assert.equal(w.get(ID), undefined);
  }));
