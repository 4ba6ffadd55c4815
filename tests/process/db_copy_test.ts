/**
 * `deno task db:copy` on the SQLite file of a real daemon run (sessions and events from a scripted plugin, a
 * named token, a decided approval, a webhook endpoint with a delivery, push keys and a subscription, a hook
 * setting), into a fresh database of a real PostgreSQL: the printed counts agree with the file, and what went
 * over reads back through the Postgres logs. A second run into the now non-empty database is refused and
 * changes nothing; a bad URL is one line without the password; a running daemon's file is refused.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { fileURLToPath } from "node:url";
import { freePort, startDaemon } from "../../testing/daemon.ts";
import { connectAgent, userEnd } from "../../testing/agent.ts";
import { startPostgres } from "../../testing/postgres.ts";
import { connectPostgres } from "../../lib/storage/pg_client.ts";
import { PgEventLog } from "../../lib/storage/pg_event_log.ts";
import { PgTokenLog } from "../../lib/storage/pg_token_log.ts";
import { PgApprovalLog } from "../../lib/storage/pg_approval_log.ts";
import { hashToken } from "../../lib/tokens.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The task as a person runs it. */
async function dbCopy(...args: string[]): Promise<Run> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", "db:copy", ...args],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** Rows per table of the target's public schema. */
async function tableCounts(url: string): Promise<Record<string, number>> {
  const sql = connectPostgres(url, { max: 1 });
  try {
    const tables = await sql`SELECT table_name FROM information_schema.tables
      WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`;
    const counts: Record<string, number> = {};
    for (const { table_name: t } of tables) {
      counts[t] = Number((await sql.unsafe(`SELECT count(*)::bigint AS n FROM "${t}"`))[0].n);
    }
    return counts;
  } finally {
    await sql.end();
  }
}

const b64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_")
    .replace(/=+$/, "");

Deno.test("db:copy: a daemon's SQLite file into an empty Postgres, verified and read back", async (t) => {
  await using pg = await startPostgres();
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-dbcopy-" });
  const file = `${dataDir}/lvmh.db`;
  try {
    const d = await startDaemon({ dataDir });
    let token = "";
    try {
      const a = await connectAgent(d, { sessionId: "cp1" });
      const b = await connectAgent(d, { sessionId: "cp2" });
      a.send("agent_start");
      a.send("message_end", userEnd("u1", "hello there"));
      a.send("approval_request", {
        approvalId: "r1",
        toolCallId: "call-r1",
        toolName: "bash",
        args: { command: "echo hi" },
      });
      const lastA = a.send("agent_end");
      b.send("message_end", userEnd("u2", "second session"));
      const lastB = b.send("agent_end");
      await a.waitFrame((f) => f.type === "ack" && f.lastSeq === lastA, "ack of cp1");
      await b.waitFrame((f) => f.type === "ack" && f.lastSeq === lastB, "ack of cp2");
      const decided = await d.api("/api/approvals/r1", {
        method: "POST",
        body: JSON.stringify({ decision: "approve" }),
      });
      assert.equal(decided.status, 200, await decided.clone().text());
      await decided.body?.cancel();

      const minted = await d.api("/api/tokens", {
        method: "POST",
        body: JSON.stringify({ name: "ci-bot", role: "operator" }),
      });
      token = (await minted.json()).token;
      assert.ok(token, "a token was minted");

      const wh = await d.api("/api/webhooks", {
        method: "POST",
        body: JSON.stringify({ url: `http://127.0.0.1:${freePort()}/hook`, events: ["run.settled"] }),
      });
      assert.equal(wh.status, 201, await wh.clone().text());
      const { id: endpoint } = await wh.json();
      const tested = await d.api(`/api/webhooks/${endpoint}/test`, { method: "POST" });
      assert.ok(tested.ok, await tested.clone().text());
      await tested.body?.cancel();

      await (await d.api("/api/push/key")).body?.cancel();
      const pair = await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, true, [
        "deriveBits",
      ]);
      const p256dh = b64url(new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey)));
      const sub = await d.api("/api/push/subscriptions", {
        method: "POST",
        body: JSON.stringify({
          subscription: {
            endpoint: "https://push.example.test/sub/1",
            keys: { p256dh, auth: b64url(crypto.getRandomValues(new Uint8Array(16))) },
          },
          kinds: ["approval.requested"],
        }),
      });
      assert.equal(sub.status, 201, await sub.clone().text());
      await sub.body?.cancel();

      const secret = await d.api("/api/hooks/gitlab", {
        method: "PUT",
        body: JSON.stringify({ secret: "a-gitlab-secret-of-some-length" }),
      });
      assert.ok(secret.ok, await secret.clone().text());
      await secret.body?.cancel();

      await t.step("a running daemon's file is refused, before anything is touched", async () => {
        const url = await pg.newDatabase();
        const run = await dbCopy("--from", `sqlite:${file}`, "--to", url);
        assert.equal(run.code, 1, run.stderr);
        assert.match(run.stderr, /in use/);
        assert.deepEqual(await tableCounts(url), {}, "not even migrated");
      });
      await a.close();
      await b.close();
    } finally {
      await d.stop();
    }

    const url = await pg.newDatabase();
    const src = new DatabaseSync(file, { readOnly: true });
    const sqliteCount = (table: string) =>
      Number((src.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n);
    const expected = {
      events: sqliteCount("events"),
      sessions: sqliteCount("sessions"),
      tokens: sqliteCount("tokens"),
      audit: sqliteCount("audit"),
      approvals: sqliteCount("approvals"),
      webhook_outbox: sqliteCount("webhook_outbox"),
      push_subscriptions: sqliteCount("push_subscriptions"),
      settings: sqliteCount("settings") + sqliteCount("hook_settings"),
    };
    const sqliteEvents = (id: string) =>
      src.prepare("SELECT sessionId, seq, ts, type, payload FROM events WHERE sessionId = ? ORDER BY seq")
        .all(id)
        .map((r) => ({ ...r }));
    const cp1 = sqliteEvents("cp1");
    const cp2 = sqliteEvents("cp2");
    src.close();
    assert.equal(cp1.length, 4, "the plugin's events reached the file");
    assert.ok(expected.webhook_outbox >= 1 && expected.push_subscriptions === 1 && expected.tokens === 1);

    let printed = "";
    await t.step("the copy exits 0 and prints counts that agree with the file", async () => {
      const run = await dbCopy("--from", `sqlite:${file}`, "--to", url);
      assert.equal(run.code, 0, run.stdout + run.stderr);
      printed = run.stdout;
      const password = decodeURIComponent(new URL(url).password);
      assert.ok(password && !(run.stdout + run.stderr).includes(password), "the password is never printed");
      assert.doesNotMatch(printed, /MISMATCH/);
      for (const [table, n] of Object.entries(expected)) {
        assert.match(printed, new RegExp(`^\\S.*\\s${table}\\s+${n}\\s+${n}\\s+OK$`, "m"), `${table} ${n}`);
      }
      assert.match(printed, /search_fts\s+\d+\s+-\s+rebuilt from the events, not copied/);
    });

    await t.step("what went over reads back through the Postgres logs", async () => {
      const events = await PgEventLog.open(url, { max: 2 });
      const tokens = await PgTokenLog.open(url, { max: 2 });
      const approvals = await PgApprovalLog.open(url, { max: 2 });
      const sql = connectPostgres(url, { max: 1 });
      try {
        assert.deepEqual(await events.events("cp1", { after: 0, limit: 100 }), cp1);
        assert.deepEqual(await events.events("cp2", { after: 0, limit: 100 }), cp2);
        assert.equal(await events.lastSeq("cp1"), cp1.at(-1)!.seq, "the counter row is the last seq");
        assert.equal(await events.lastSeq("cp2"), cp2.at(-1)!.seq);
        assert.deepEqual(await tokens.find(await hashToken(token)), { name: "ci-bot", role: "operator" });
        const r1 = await approvals.get("r1");
        assert.equal(r1?.state, "approved");
        assert.equal(r1?.sessionId, "cp1");
        const [secret] = await sql`SELECT value FROM settings WHERE key = 'hook.gitlab.secret'`;
        assert.equal(secret?.value, "a-gitlab-secret-of-some-length");
        const [{ last_id: counter }] = await sql`SELECT last_id FROM audit_counter`;
        const [{ top }] = await sql`SELECT max(id) AS top FROM audit`;
        assert.ok(counter >= top && top > 0, "new audit ids continue after the copied ones");
        const [{ next, copied }] = await sql`SELECT
          nextval(pg_get_serial_sequence('webhook_attempts', 'seq')) AS next, max(seq) AS copied
          FROM webhook_attempts`;
        assert.ok(copied >= 1 && next > copied, "new attempts are numbered after the copied ones");
      } finally {
        await sql.end();
        await approvals.close();
        await tokens.close();
        await events.close();
      }
    });

    await t.step("a second run into the same database is refused and changes nothing", async () => {
      const before = await tableCounts(url);
      const run = await dbCopy("--from", `sqlite:${file}`, "--to", url);
      assert.equal(run.code, 1, run.stdout + run.stderr);
      assert.match(run.stderr, /not empty \(.*events: \d+/);
      assert.deepEqual(await tableCounts(url), before);
    });

    await t.step("rows with no Postgres table: nothing copied, unless --allow-partial", async () => {
      const later = `${dataDir}/later.db`;
      await Deno.copyFile(file, later);
      const db = new DatabaseSync(later);
      db.exec("CREATE TABLE future_kind(id TEXT PRIMARY KEY); INSERT INTO future_kind VALUES ('x')");
      // An image's bytes, every byte value, go over as bytea.
      const bytes = Uint8Array.from({ length: 512 }, (_, i) => i % 256);
      db.prepare(
        "INSERT INTO image_blobs(sha256, mimeType, bytes, data, createdAt) VALUES ('ab', 'image/png', ?, ?, 1)",
      )
        .run(bytes.length, bytes);
      db.exec("INSERT INTO session_images(sessionId, sha256, createdAt) VALUES ('cp1', 'ab', 1)");
      db.close();
      const target = await pg.newDatabase();
      const refused = await dbCopy("--from", `sqlite:${later}`, "--to", target);
      assert.equal(refused.code, 1, refused.stdout + refused.stderr);
      assert.match(refused.stderr, /future_kind, 1 rows\): not copied/);
      assert.match(refused.stderr, /nothing copied/);
      assert.equal((await tableCounts(target)).events, 0, "the target is left empty");
      const partial = await dbCopy("--from", `sqlite:${later}`, "--to", target, "--allow-partial");
      assert.equal(partial.code, 0, partial.stdout + partial.stderr);
      assert.match(partial.stdout, /future_kind\s+1\s+-\s+not copied: no copier for this table/);
      assert.equal((await tableCounts(target)).events, expected.events);
      const sql = connectPostgres(target, { max: 1 });
      try {
        const [blob] = await sql`SELECT data, bytes FROM image_blobs WHERE sha256 = 'ab'`;
        assert.deepEqual(new Uint8Array(blob.data), bytes);
        assert.equal(blob.bytes, 512);
      } finally {
        await sql.end();
      }
    });

    await t.step("bad usage and an unreachable database: one line, exit 2, no password", async () => {
      const password = "Sup3r-s3cret-pw";
      const port = freePort();
      const run = await dbCopy(
        "--from",
        `sqlite:${file}`,
        "--to",
        `postgres://lvmh:${password}@127.0.0.1:${port}/x`,
      );
      assert.equal(run.code, 2, run.stderr);
      assert.equal(run.stderr.trim().split("\n").length, 1, run.stderr);
      assert.match(run.stderr, new RegExp(`127\\.0\\.0\\.1:${port}`));
      assert.ok(!(run.stdout + run.stderr).includes(password), "the password is never printed");
      const usage = await dbCopy("--from", file, "--to", `mysql://u:${password}@h/db`);
      assert.equal(usage.code, 2);
      assert.equal(usage.stderr.trim().split("\n").length, 1, usage.stderr);
      assert.ok(!usage.stderr.includes(password));
    });
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});
