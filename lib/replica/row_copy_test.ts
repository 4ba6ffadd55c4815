/**
 * The copy of shared rows: a read of every row tells which sessions moved (deletions too), a read that
 * overlapped one of this replica's writes is dropped, and reads asked for while one is out share it. The
 * shared table is an array the test holds, with each read released by hand.
 */
import assert from "node:assert/strict";
import { RowCopy } from "./row_copy.ts";

type Row = { id: string; v: number };

function heldTable(rows: Row[]) {
  const reads: (() => void)[] = [];
  const changed: string[][] = [];
  const copy = new RowCopy<Row>({
    readAll: () => new Promise((resolve) => reads.push(() => resolve(rows.map((r) => ({ ...r }))))),
    key: (r) => r.id,
    moved: (was, now) => was?.v !== now?.v,
    changed: (ids) => changed.push(ids),
    what: "test rows",
  });
  return { copy, reads, changed, rows };
}

Deno.test("row copy: moved rows and deletions are told; a read around a write of this replica is dropped", async () => {
  const t = heldTable([{ id: "a", v: 1 }, { id: "b", v: 1 }]);
  let read = t.copy.refresh();
  assert.equal(t.copy.refresh(), read, "a second ask shares the read out");
  t.reads.shift()!();
  await read;
  assert.deepEqual(t.changed, [["a", "b"]]);

  // Another replica moved a and deleted b: both told.
  t.rows.splice(0, 2, { id: "a", v: 2 });
  read = t.copy.refresh();
  t.reads.shift()!();
  await read;
  assert.deepEqual(t.changed.at(-1), ["a", "b"]);
  assert.equal(t.copy.has("b"), false);

  // A read that started before this replica wrote a = 3 has a = 2: dropped, the copy keeps 3.
  read = t.copy.refresh();
  await t.copy.write(() => Promise.resolve(t.copy.put("a", { id: "a", v: 3 })));
  t.reads.shift()!();
  await read;
  assert.equal(t.copy.get("a")?.v, 3);
  assert.equal(t.changed.length, 2, "nothing told of the dropped read");
  assert.equal(t.copy.put("a", { id: "a", v: 3 }), false, "the same row again: not moved");
  t.copy.close();
});
