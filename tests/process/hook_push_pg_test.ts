/**
 * What only the PostgreSQL hook prompt and push logs have, on a real server (testing/postgres.ts): three
 * replicas draining a backlog of kept prompts at once, a claimant cut off from the database (a paused relay)
 * whose lease runs out and whose answer arrives after another replica took the prompt over, a crowd of
 * replicas starting together on a database with no VAPID pair, and a database at schema 5 migrated to the
 * hook and push tables.
 */
import assert from "node:assert/strict";
import { PgHookPromptLog } from "../../lib/storage/pg_hook_prompt_log.ts";
import { PgPushLog } from "../../lib/storage/pg_push_log.ts";
import { connectPostgres } from "../../lib/storage/pg_client.ts";
import { migrate, MIGRATIONS } from "../../lib/storage/pg_migrate.ts";
import { pausableProxy } from "../../testing/pausable_proxy.ts";
import { newDatabase, postgresTest, runningServer } from "../../testing/storage_replicas.ts";
import { keptPrompt, subscription } from "../../testing/hook_push.ts";
import { waitFor } from "../../testing/daemon.ts";

const LONG = 60_000;

postgresTest(
  "hook prompts and push on PostgreSQL: a drained backlog, a cut-off claimant, many replicas, migration",
  async (t) => {
    await t.step("three replicas drain 60 kept prompts at once: each is claimed and answered once", drain);
    await t.step(
      "a claimant cut off past its lease: another takes over, the late answer is refused",
      cutOff,
    );
    await t.step("five replicas starting together on a fresh database keep one VAPID pair", crowd);
    await t.step("a database at schema 5 gets the hook and push tables", upgrade);
  },
);

async function drain() {
  const url = await newDatabase();
  const replicas = await Promise.all([1, 2, 3].map(() => PgHookPromptLog.open(url, { max: 3 })));
  try {
    for (let i = 0; i < 60; i++) await replicas[i % 3].keep(keptPrompt(`d${i}`, `s${i % 5}`, 1_000 + i));
    const taken: string[][] = [[], [], []];
    // Each replica runs two workers, as a daemon carries several prompts at once.
    await Promise.all(replicas.flatMap((log, r) =>
      [0, 1].map(async () => {
        for (let c = await log.claim(`R${r}`, LONG); c; c = await log.claim(`R${r}`, LONG)) {
          taken[r].push(c.prompt.id);
          assert.equal(await log.answered(c.lease), true, `${c.prompt.id} answered by its claimant`);
        }
      })
    ));
    const all = taken.flat();
    assert.equal(all.length, 60, `claims per replica: ${taken.map((x) => x.length)}`);
    assert.equal(new Set(all).size, 60, "no prompt claimed twice");
    assert.deepEqual(await replicas[0].prompts(), []);
  } finally {
    for (const log of replicas) await log.close();
  }
}

async function cutOff() {
  const url = await newDatabase();
  await using proxy = pausableProxy(runningServer().port);
  const a = await PgHookPromptLog.open(url.replace(`:${runningServer().port}/`, `:${proxy.port}/`), {
    max: 1,
  });
  const b = await PgHookPromptLog.open(url, { max: 1 });
  try {
    await b.keep(keptPrompt("c", "s", 1_000));
    const mine = await a.claim("A", 300);
    assert.ok(mine);
    // A sent the prompt and its answer is on the wire, unseen by the server, while A's lease runs out.
    proxy.pause();
    const late = a.answered(mine.lease);
    const theirs = await waitFor(() => b.claim("B", LONG), "A's lease to run out", 5_000);
    assert.deepEqual(theirs.prompt, keptPrompt("c", "s", 1_000));
    proxy.resume();
    assert.equal(await late, false, "A's answer arrives after the takeover and is refused");
    assert.equal(await a.renew(mine.lease), false, "A learns it lost the prompt");
    assert.deepEqual((await b.prompts()).map((p) => p.id), ["c"], "still kept for B");
    assert.equal(await b.answered(theirs.lease), true);
  } finally {
    await a.close();
    await b.close();
  }
}

async function crowd() {
  const url = await newDatabase();
  // Each opens (and so migrates) at the same moment, then asks for the pair with a pair of its own.
  const logs = await Promise.all([0, 1, 2, 3, 4].map(() => PgPushLog.open(url, { max: 1 })));
  try {
    const keys = await Promise.all(
      logs.map((log, i) => log.vapidKeys(() => ({ publicKey: `pub-${i}`, privateKey: `priv-${i}` }))),
    );
    for (const k of keys) assert.deepEqual(k, keys[0]);
    assert.equal(keys[0].privateKey, keys[0].publicKey.replace("pub", "priv"));
    const raw = connectPostgres(url, { max: 1 });
    try {
      const [{ n }] = await raw`SELECT count(*)::integer AS n FROM push_keys`;
      assert.equal(n, 1);
    } finally {
      await raw.end();
    }
  } finally {
    for (const log of logs) await log.close();
  }
}

async function upgrade() {
  const url = await newDatabase();
  const raw = connectPostgres(url, { max: 1 });
  try {
    const before = MIGRATIONS.filter((m) => m.version <= 5);
    assert.equal((await migrate(raw, before)).to, 5);
    const result = await migrate(raw);
    assert.ok(result.applied.includes(6), `applied ${result.applied}`);
    const prompts = new PgHookPromptLog(raw);
    await prompts.keep(keptPrompt("u", "s", 1));
    assert.equal((await prompts.claim("A", LONG))?.prompt.id, "u");
    const push = new PgPushLog(raw);
    await push.upsert(subscription("e", "alice", ["run.failed"], 1));
    assert.equal((await push.ofOwner("alice")).length, 1);
  } finally {
    await raw.end();
  }
}
