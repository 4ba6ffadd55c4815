import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { type CheckpointPolicy, WalCheckpointer } from "./wal_checkpointer.ts";
import { waitFor } from "../testing/daemon.ts";

const ROW = "x".repeat(4000);

/** A WAL file like the daemon's, written by `db`, with the checkpointer on it. */
async function walFile(policy?: Partial<CheckpointPolicy>) {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-wal-" });
  const path = `${dir}/lvmh.db`;
  const db = new DatabaseSync(path);
  db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; CREATE TABLE t(v TEXT)");
  const insert = db.prepare("INSERT INTO t VALUES (?)");
  const checkpointer = new WalCheckpointer(db, path, {
    intervalMs: 10,
    quietMs: 50,
    busyFrames: 1000,
    maxFrames: 1_000_000,
    keepBytes: 1024 * 1024,
    ...policy,
  });
  const size = (file: string) => Deno.statSync(file).size;
  return {
    path,
    db,
    checkpointer,
    /** Commit `rows` rows of 4 KB in one transaction. */
    write(rows: number) {
      db.exec("BEGIN");
      for (let i = 0; i < rows; i++) insert.run(ROW);
      db.exec("COMMIT");
    },
    dbBytes: () => size(path),
    walBytes: () => size(`${path}-wal`),
    async [Symbol.asyncDispose]() {
      await checkpointer.close();
      if (db.isOpen) db.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("WalCheckpointer: commits never checkpoint on the daemon's connection; the worker copies the log", async () => {
  await using f = await walFile();
  const before = f.dbBytes();
  // 2,500 pages of log: SQLite's automatic checkpoint would have run inside these commits, twice.
  for (let i = 0; i < 25; i++) f.write(100);
  assert.equal(
    (f.db.prepare("PRAGMA wal_autocheckpoint").get() as { wal_autocheckpoint: number }).wal_autocheckpoint,
    0,
  );
  // Only the worker's connection checkpoints: the database file grows by what the log held.
  await waitFor(() => f.dbBytes() >= before + 2500 * 4096, "the worker to copy the log into the file");
  assert.equal((f.db.prepare("SELECT count(*) AS n FROM t").get() as { n: number }).n, 2500);
});

Deno.test("WalCheckpointer: a trickle of commits is copied once per quiet interval, not on every look", async () => {
  await using f = await walFile({ quietMs: 250 });
  const copies = new Set<number>(); // the database file changes only when a checkpoint copies into it
  const end = performance.now() + 1000;
  while (performance.now() < end) {
    f.write(1);
    copies.add(Deno.statSync(f.path).mtime!.getTime());
    await new Promise((r) => setTimeout(r, 10));
  }
  // The worker looks every 10 ms and finds a new commit each time: ~100 checkpoints without the spacing.
  assert.ok(copies.size <= 7, `${copies.size} checkpoints in 1 s`);
  await waitFor(() => copies.add(Deno.statSync(f.path).mtime!.getTime()).size > 1, "a checkpoint at all");
});

Deno.test("WalCheckpointer: under writes that never pause, the log stays bounded", async () => {
  const maxFrames = 300;
  await using f = await walFile({ maxFrames, keepBytes: 256 * 1024 });
  let largest = 0;
  // 40 MB, 400 KB a commit, yielding between commits as the daemon's ingest does: without the bound the log
  // would never start over, since the worker's checkpoint never finds every frame copied.
  for (let i = 0; i < 100; i++) {
    f.write(100);
    largest = Math.max(largest, f.walBytes());
    await new Promise((r) => setTimeout(r, 0));
  }
  assert(largest < 10 * 1024 * 1024, `the log reached ${(largest / 1048576).toFixed(1)} MB`);
  assert.equal((f.db.prepare("SELECT count(*) AS n FROM t").get() as { n: number }).n, 10_000);
});

Deno.test("WalCheckpointer: closed, it leaves the daemon's connection to do the last checkpoint", async () => {
  await using f = await walFile();
  f.write(50);
  await f.checkpointer.close();
  f.db.close();
  // The last connection to close copies the log and removes it.
  assert.equal(await Deno.stat(`${f.path}-wal`).then(() => true, () => false), false);
  const again = new DatabaseSync(f.path);
  assert.equal((again.prepare("SELECT count(*) AS n FROM t").get() as { n: number }).n, 50);
  again.close();
});

Deno.test("WalCheckpointer: a worker that cannot open the file gives checkpoints back to SQLite", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-wal-" });
  const db = new DatabaseSync(`${dir}/lvmh.db`);
  db.exec("PRAGMA journal_mode=WAL");
  const errors: string[] = [];
  const error = console.error;
  console.error = (line: string) => errors.push(line);
  try {
    const checkpointer = new WalCheckpointer(db, `${dir}/missing/lvmh.db`);
    await waitFor(
      () =>
        (db.prepare("PRAGMA wal_autocheckpoint").get() as { wal_autocheckpoint: number })
          .wal_autocheckpoint === 1000,
      "automatic checkpoints back",
    );
    await checkpointer.close();
  } finally {
    console.error = error;
    db.close();
    await Deno.remove(dir, { recursive: true });
  }
  assert.equal(errors.length, 1);
  assert(errors[0].includes("checkpoints are automatic again"), errors[0]);
});
