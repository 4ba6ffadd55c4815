/**
 * What only the PostgreSQL settings log has, on a real server (testing/postgres.ts): a change made behind its
 * back (no hint) found by the sweep, a killed LISTEN connection, a NOTIFY that lies, and two replicas
 * writing the same keys at once while a third reads (every read is one writer's whole change), and a
 * database at the schema before the settings, images and records migration brought up to it.
 */
import assert from "node:assert/strict";
import { connectPostgres } from "../../lib/storage/pg_client.ts";
import { migrate, MIGRATIONS } from "../../lib/storage/pg_migrate.ts";
import { PgImageLog } from "../../lib/storage/pg_image_log.ts";
import { PgMergeRequestLog } from "../../lib/storage/pg_merge_request_log.ts";
import { SETTINGS_CHANNEL } from "../../lib/storage/pg_settings_log.ts";
import { GITLAB_BASE_URL, GITLAB_TOKEN, GITLAB_USERNAME } from "../../lib/storage/settings_log.ts";
import { adminClient, newDatabase, postgresTest } from "../../testing/storage_replicas.ts";
import { hear, openPg } from "../../testing/settings_images_mr.ts";
import { waitFor } from "../../testing/daemon.ts";

postgresTest(
  "settings on PostgreSQL: lost hints, a killed LISTEN, lying hints, concurrent writers, migration",
  async (t) => {
    await t.step("a change that sent no hint is heard from the sweep within 1 s", () => unhinted());
    await t.step("the LISTEN connection killed: a change made meanwhile is still heard", () => killed());
    await t.step("a NOTIFY naming a key that did not change tells nobody it changed", () => lying());
    await t.step("two replicas writing the same keys at once: every read is one whole write", () => torn());
    await t.step("a database before this migration gets the tables", () => upgrade());
  },
);

async function unhinted() {
  const url = await newDatabase();
  const o = await openPg(url);
  const raw = connectPostgres(url, { max: 1 });
  try {
    await o.a.settings.put({ [GITLAB_USERNAME]: "alice" });
    const hearing = await hear(o.b.settings);
    const heard = hearing.next(GITLAB_USERNAME, 1_000);
    // Another writer (a restored backup, a hand-run statement): the row changes, nobody NOTIFYs.
    await raw`UPDATE settings SET value = 'bob', version = nextval('settings_versions')
      WHERE key = ${GITLAB_USERNAME}`;
    console.log(`  heard by the sweep after ${Math.round(await heard)} ms`);
    const removed = hearing.next(GITLAB_USERNAME, 1_000);
    await raw`DELETE FROM settings WHERE key = ${GITLAB_USERNAME}`;
    await removed;
    hearing.stop();
  } finally {
    await raw.end();
    await o.close();
  }
}

async function killed() {
  const url = await newDatabase();
  const db = new URL(url).pathname.slice(1);
  const admin = adminClient();
  // No sweep: only the listener's own look after it LISTENs again can bring the change.
  const o = await openPg(url, { sweepMs: 0 });
  try {
    const hearing = await hear(o.b.settings);
    const pid = await waitFor(
      async () => {
        const rows = await admin`SELECT pid FROM pg_stat_activity
        WHERE datname = ${db} AND state = 'idle' AND query ILIKE ${"listen%" + SETTINGS_CHANNEL + "%"}`;
        return rows.length === 1 ? Number(rows[0].pid) : null;
      },
      "LISTEN",
      5_000,
    );
    await admin`SELECT pg_terminate_backend(${pid})`;
    const heard = hearing.next(GITLAB_TOKEN, 5_000);
    await o.a.settings.put({ [GITLAB_TOKEN]: "glpat-after-the-kill-0123456789" });
    await heard;
    assert.equal(await o.b.settings.get(GITLAB_TOKEN), "glpat-after-the-kill-0123456789");
    hearing.stop();
  } finally {
    await o.close();
    await admin.end();
  }
}

async function lying() {
  const url = await newDatabase();
  const o = await openPg(url);
  const raw = connectPostgres(url, { max: 1 });
  try {
    await o.a.settings.put({ [GITLAB_TOKEN]: "glpat-unchanged-0123456789abcdef" });
    const hearing = await hear(o.b.settings);
    // Anyone on the database can NOTIFY: the payload names a key, and only the table decides.
    await raw`SELECT pg_notify(${SETTINGS_CHANNEL}, ${GITLAB_TOKEN})`;
    const real = hearing.next(GITLAB_USERNAME, 1_000);
    await o.a.settings.put({ [GITLAB_USERNAME]: "alice" });
    await real;
    hearing.stop();
    assert.deepEqual(hearing.calls, [[GITLAB_USERNAME]]);
  } finally {
    await raw.end();
    await o.close();
  }
}

async function torn() {
  const url = await newDatabase();
  const o = await openPg(url);
  try {
    const write = (who: string, i: number) =>
      (who === "a" ? o.a : o.b).settings.put({
        [GITLAB_TOKEN]: `glpat-${who}${i}-0123456789abcdef`,
        [GITLAB_BASE_URL]: `https://${who}${i}.example`,
        [GITLAB_USERNAME]: `${who}${i}`,
      });
    let done = false;
    let reads = 0;
    const reader = (async () => {
      while (!done) {
        const got = await o.b.settings.getMany([GITLAB_TOKEN, GITLAB_BASE_URL, GITLAB_USERNAME]);
        reads++;
        if (got[GITLAB_USERNAME] === null) continue;
        const who = got[GITLAB_USERNAME]!;
        assert.equal(got[GITLAB_TOKEN], `glpat-${who}-0123456789abcdef`);
        assert.equal(got[GITLAB_BASE_URL], `https://${who}.example`);
      }
    })();
    for (let i = 0; i < 30; i++) await Promise.all([write("a", i), write("b", i)]);
    done = true;
    await reader;
    assert.ok(reads > 0);
    const last = await o.a.settings.get(GITLAB_USERNAME);
    assert.ok(last === "a29" || last === "b29", `last write wins whole: ${last}`);
  } finally {
    await o.close();
  }
}

async function upgrade() {
  const url = await newDatabase();
  const mine = MIGRATIONS.find((m) => m.title.startsWith("settings (with a version per write)"))!;
  const sql = connectPostgres(url, { max: 1 });
  try {
    await migrate(sql, MIGRATIONS.filter((m) => m.version < mine.version));
    assert.ok((await migrate(sql)).applied.includes(mine.version));
    const images = await PgImageLog.open(url, { max: 1 });
    const mrs = await PgMergeRequestLog.open(url, { max: 1 });
    try {
      const [ref] = await images.put("s", [{ mimeType: "image/png", data: btoa("\x00\xff\x10") }]);
      assert.deepEqual((await images.get("s", ref.sha256))?.data, Uint8Array.of(0, 0xff, 0x10));
      assert.equal(await mrs.updateIf("s", null, { repo: "g/p", sourceBranch: "b", sha: "abc" }, 1), true);
    } finally {
      await images.close();
      await mrs.close();
    }
  } finally {
    await sql.end();
  }
}
