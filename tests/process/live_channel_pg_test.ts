/**
 * The live channel on PostgreSQL (lib/storage/pg_live_channel.ts), on a real server (testing/postgres.ts): two
 * channel objects on one database stand for replicas A and B. Deltas go A → B in order and never back to A; a
 * burst arrives whole and in order; an oversize delta is dropped and counted; B's LISTEN backend killed, B
 * hears again within a deadline.
 */
import assert from "node:assert/strict";
import { adminClient, listeners, newDatabase, postgresTest } from "../../testing/storage_replicas.ts";
import { freePort, waitFor } from "../../testing/daemon.ts";
import {
  MAX_PAYLOAD_BYTES,
  MAX_QUEUED,
  parsePayload,
  PgLiveChannel,
} from "../../lib/storage/pg_live_channel.ts";
import type { LiveDelta } from "../../lib/storage/live_channel.ts";

/** What a replica's deltas look like: a `message_update` as browsers receive it. */
function delta(sessionId: string, after: number, seq: number, text = `word ${seq} `): LiveDelta {
  const json = JSON.stringify({
    v: 1,
    sessionId,
    seq,
    ts: 1_700_000_000_000 + seq,
    type: "message_update",
    delta: text,
  });
  return { sessionId, after, json };
}

async function withReplicas(
  fn: (a: PgLiveChannel, b: PgLiveChannel, db: string) => Promise<void>,
  options: { pack?: boolean; pingMs?: number } = {},
) {
  const url = await newDatabase();
  const a = PgLiveChannel.open(url, options);
  const b = PgLiveChannel.open(url, options);
  try {
    await fn(a, b, new URL(url).pathname.slice(1));
  } finally {
    await a.close();
    await b.close();
  }
}

/** Subscribes and waits for the LISTEN: what is published from now on is heard. */
async function recorder(channel: PgLiveChannel) {
  const heard: LiveDelta[] = [];
  const stop = channel.subscribe((d) => heard.push(d));
  await channel.listening();
  return { heard, stop };
}

postgresTest("live channel on PostgreSQL: A → B", async (t) => {
  for (const pack of [true, false]) {
    const mode = pack ? "packed payloads" : "one payload per delta";
    await t.step(`${mode}: in order on B, never back to A`, () => withReplicas(inOrderNotSelf, { pack }));
    await t.step(`${mode}: a burst of 1,000 arrives whole, in order`, () => withReplicas(burst, { pack }));
  }
  await t.step("an oversize delta is dropped and counted, the others go", () => withReplicas(oversize));
  await t.step(
    "B's LISTEN backend killed: B hears new deltas again within 5 s",
    () => withReplicas(listenerKilled, { pingMs: 500 }),
  );
  await t.step("session ids and text of any characters come back as sent", () => withReplicas(anyText));
  await t.step("past MAX_QUEUED waiting, the oldest are dropped and counted", () => withReplicas(queueBound));
  await t.step("the database away: publish neither throws nor waits, the delta is counted", unreachable);
});

async function inOrderNotSelf(a: PgLiveChannel, b: PgLiveChannel) {
  const onA = await recorder(a);
  const onB = await recorder(b);
  const sent = [delta("s1", 3, 4), delta("s2", 0, 1), delta("s1", 3, 5), delta("s1", 6, 7)];
  for (const d of sent) a.publish(d);
  await waitFor(() => onB.heard.length >= sent.length, "B hears A's deltas", 5_000);
  assert.deepEqual(onB.heard, sent);
  // B publishes one too: A hears it, and B does not; A's own never came back to A.
  const back = delta("s1", 7, 8);
  b.publish(back);
  await waitFor(() => onA.heard.length >= 1, "A hears B's delta", 5_000);
  assert.deepEqual(onA.heard, [back], "A heard only B's delta, none of its own");
  // One more from A after B's, so anything of B's own that came back to B would be in by now.
  a.publish(delta("s1", 8, 9));
  await waitFor(() => onB.heard.length >= sent.length + 1, "B hears the last one", 5_000);
  assert.equal(onB.heard.length, sent.length + 1, "B did not hear itself");
  assert.equal(a.dropped + b.dropped, 0);
  onA.stop();
  onB.stop();
}

async function burst(a: PgLiveChannel, b: PgLiveChannel) {
  const onB = await recorder(b);
  const sent: LiveDelta[] = [];
  for (let i = 0; i < 1_000; i++) {
    const d = delta(`s${i % 7}`, Math.floor(i / 10), i + 1);
    sent.push(d);
    a.publish(d);
  }
  await waitFor(() => onB.heard.length >= sent.length, "B hears all 1,000", 10_000);
  assert.equal(onB.heard.length, sent.length, "none twice");
  assert.deepEqual(onB.heard, sent, "every one, in publish order");
  assert.equal(a.dropped, 0);
  onB.stop();
}

async function oversize(a: PgLiveChannel, b: PgLiveChannel) {
  const onB = await recorder(b);
  const big = delta("s", 1, 2, "x".repeat(MAX_PAYLOAD_BYTES));
  // Just under the limit in characters, over it in bytes: counted by what NOTIFY counts.
  const wide = delta("s", 1, 3, "é".repeat(4_000));
  const fits = delta("s", 1, 4, "y".repeat(MAX_PAYLOAD_BYTES - 200));
  a.publish(delta("s", 1, 1));
  a.publish(big);
  a.publish(wide);
  a.publish(fits);
  a.publish(delta("s", 1, 5));
  assert.equal(a.dropped, 2, "dropped on publish");
  await waitFor(() => onB.heard.length >= 3, "the others", 5_000);
  assert.deepEqual(onB.heard.map((d) => JSON.parse(d.json).seq), [1, 4, 5]);
  assert.equal(onB.heard[1].json, fits.json);
  onB.stop();
}

async function listenerKilled(a: PgLiveChannel, b: PgLiveChannel, db: string) {
  const admin = adminClient();
  try {
    const onB = await recorder(b);
    const [pid] = await waitFor(async () => {
      const pids = await listeners(admin, db);
      return pids.length === 1 ? pids : null;
    }, "B's LISTEN");
    a.publish(delta("s", 0, 1));
    await waitFor(() => onB.heard.length === 1, "before the kill", 5_000);
    await admin`SELECT pg_terminate_backend(${pid})`;
    const killedAt = performance.now();
    // Lossy: deltas sent while B is away are gone. Keep publishing until B hears one again.
    let seq = 1;
    const heard = await waitFor(
      () => {
        a.publish(delta("s", 0, ++seq));
        return onB.heard.length > 1 ? onB.heard.slice(1) : null;
      },
      "B hears again",
      5_000,
    );
    const ms = performance.now() - killedAt;
    console.log(`  B heard again ${ms.toFixed(0)} ms after its LISTEN backend was killed`);
    assert.ok((await listeners(admin, db)).every((p) => p !== pid), "a new LISTEN backend");
    // What B hears after the gap is still in order.
    const seqs = heard.map((d) => JSON.parse(d.json).seq as number);
    assert.deepEqual(seqs, [...seqs].sort((x, y) => x - y));
    onB.stop();
  } finally {
    await admin.end();
  }
}

async function anyText(a: PgLiveChannel, b: PgLiveChannel) {
  const onB = await recorder(b);
  const sent = [
    delta("id with spaces\nand a newline 12 3", 2, 3, 'line\nbreak, tab\t, quote " and 5 7\n'),
    delta("ünïcödé-😀", 9, 10, "emoji 😀 and CJK 漢字"),
    delta("", 0, 1, ""),
  ];
  for (const d of sent) a.publish(d);
  await waitFor(() => onB.heard.length >= sent.length, "B hears them", 5_000);
  assert.deepEqual(onB.heard, sent);
  // A payload this build does not understand is ignored, not misread.
  assert.equal(parsePayload("L2 x\n1 1 1\nab"), null);
  assert.equal(parsePayload("L1 x\n1 5 1\nab"), null);
  onB.stop();
}

async function queueBound(a: PgLiveChannel, b: PgLiveChannel) {
  const onB = await recorder(b);
  // All in one tick: nothing leaves before the first statement, so the queue holds them all at once.
  const extra = 5;
  for (let i = 1; i <= MAX_QUEUED + extra; i++) a.publish(delta("s", 0, i));
  assert.equal(a.dropped, extra);
  await waitFor(() => onB.heard.length >= MAX_QUEUED, "the rest", 10_000);
  const seqs = onB.heard.map((d) => JSON.parse(d.json).seq as number);
  assert.equal(seqs.length, MAX_QUEUED);
  assert.equal(seqs[0], extra + 1, "the oldest went");
  assert.equal(seqs.at(-1), MAX_QUEUED + extra);
  assert.ok(seqs.every((s, i) => i === 0 || s === seqs[i - 1] + 1), "in order, no gap");
  onB.stop();
}

async function unreachable() {
  const port = await freePort();
  const channel = PgLiveChannel.open(`postgres://nobody:pw@127.0.0.1:${port}/none`, { connectTimeout: 1 });
  try {
    const t0 = performance.now();
    channel.publish(delta("s", 0, 1));
    channel.publish(delta("s", 0, 2));
    assert.ok(performance.now() - t0 < 50, "publish did not wait");
    await waitFor(() => channel.dropped === 2, "the failed send counted", 5_000);
  } finally {
    await channel.close();
  }
}
