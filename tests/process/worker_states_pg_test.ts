/**
 * lib/spawn/shared_worker_states.ts on a real PostgreSQL database: two copies standing for two replicas. A move
 * through one is in its copy at once and in the other's within a read (its `changed` told); of two moves from
 * the same state read one is made, and the refused one's copy takes the row as it is; a delete from a state
 * that no longer holds is refused.
 */
import assert from "node:assert/strict";
import { newDatabase, postgresTest } from "../../testing/storage_replicas.ts";
import { waitFor } from "../../testing/daemon.ts";
import { PgSessionStateLog } from "../../lib/storage/pg_session_state_log.ts";
import { SharedWorkerStates } from "../../lib/spawn/shared_worker_states.ts";

postgresTest("shared worker states: copies, compare-and-set, changes heard", async () => {
  const url = await newDatabase();
  const logA = await PgSessionStateLog.open(url, { max: 2 });
  const logB = await PgSessionStateLog.open(url, { max: 2 });
  const heardA: string[] = [];
  const heardB: string[] = [];
  const a = new SharedWorkerStates(logA, (id) => heardA.push(id));
  const b = new SharedWorkerStates(logB, (id) => heardB.push(id));
  try {
    await a.start(50);
    await b.start(50);
    assert.equal(await a.set("s1", "g/p", "running"), true);
    assert.equal(a.get("s1")?.state, "running", "A's copy has its own move at once");
    assert.deepEqual(heardA, ["s1"]);
    await waitFor(() => b.get("s1")?.state === "running", "B reads A's move", 5000);
    assert.ok(heardB.includes("s1"), "B's list is told");

    // Both read `running`; both stop from it: one is made.
    const made = await Promise.all([
      a.set("s1", "g/p", "stopped", { from: ["running"], logs: "a\n" }),
      b.set("s1", "g/p", "stopped", { from: ["running"], logs: "b\n" }),
    ]);
    assert.deepEqual(made.sort(), [false, true]);
    assert.equal(a.get("s1")?.state, "stopped", "the refused copy took the row as it is");
    assert.equal(b.get("s1")?.state, "stopped");
    assert.ok(["a\n", "b\n"].includes((await b.logs("s1"))!));

    assert.equal(await b.delete("s1", ["running"]), false, "not running any more");
    assert.equal(b.get("s1")?.state, "stopped");
    assert.equal(await b.delete("s1", ["stopped"]), true);
    assert.equal(b.get("s1"), undefined);
    await waitFor(() => a.get("s1") === undefined, "A reads the delete", 5000);
    assert.equal(await a.fresh("s1"), undefined);
    assert.deepEqual(a.list(), []);
  } finally {
    a.close();
    b.close();
    await logA.close();
    await logB.close();
  }
});
