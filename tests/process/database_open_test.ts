/**
 * Opening the shared database (lib/storage/open.ts) against real PostgreSQL servers, one plain and one serving
 * TLS with a throwaway CA: the schema migrated and both clients working; every `sslmode` doing what libpq's
 * does (verified or not, the host name checked or not, TLS required or preferred); and a database that cannot
 * be used stopping `main.ts` with exit 2 and one line naming host:port/db and why, never the password, in
 * seconds.
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import {
  CONNECT_TIMEOUT,
  DatabaseUnavailable,
  openDatabase,
  type SharedDatabase,
} from "../../lib/storage/open.ts";
import { MIGRATIONS } from "../../lib/storage/pg_migrate.ts";
import type { Sql } from "../../lib/storage/pg_client.ts";
import { type Postgres, startPostgres } from "../../testing/postgres.ts";
import { HAVE_POSTGRES } from "../../testing/storage_replicas.ts";
import { daemonEnv, freePort, runMainOnce, startDaemon, TEST_TOKEN, waitFor } from "../../testing/daemon.ts";
import { listenSilent } from "../../testing/silent_server.ts";

/** Seconds a refused start may take as a process (Deno starting, the config read, the refusal). */
const REFUSED_START_S = 10;

/** Whether the connection `sql` runs a query on is encrypted, as the server sees it. */
async function encrypted(sql: Sql): Promise<boolean> {
  const [row] = await sql`SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()`;
  return row.ssl as boolean;
}

function withMode(url: string, mode: string): string {
  const u = new URL(url);
  u.searchParams.set("sslmode", mode);
  return String(u);
}

function passwordOf(url: string): string {
  return decodeURIComponent(new URL(url).password);
}

/** Open, run `fn`, close. */
async function opened(
  db: { url: string; caFile: string | null },
  fn: (db: SharedDatabase) => Promise<void>,
): Promise<void> {
  const shared = await openDatabase(db);
  try {
    await fn(shared);
  } finally {
    await shared.close();
  }
}

/** The refusal `openDatabase` throws, checked to be one line without the password. */
async function refusal(db: { url: string; caFile: string | null }, connectTimeout?: number) {
  const started = performance.now();
  const error = await openDatabase(db, { connectTimeout }).then(
    (shared) => shared.close().then(() => assert.fail(`${db.url.replace(passwordOf(db.url), "***")} opened`)),
    (e) => e,
  );
  assert.ok(error instanceof DatabaseUnavailable, String(error));
  assert.ok(!error.message.includes("\n"), error.message);
  assert.ok(!error.message.includes(passwordOf(db.url)), error.message);
  return { error, ms: performance.now() - started };
}

/** Run `main.ts` on `databaseUrl` until it exits; its single stderr line. */
async function refusedStart(databaseUrl: string, extra: Record<string, string> = {}) {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-dbopen-" });
  try {
    const started = performance.now();
    const out = await runMainOnce({
      ...daemonEnv(TEST_TOKEN, 0, dataDir),
      LVMH_DATABASE_URL: databaseUrl,
      ...extra,
    });
    const seconds = (performance.now() - started) / 1000;
    const lines = out.stderr.split("\n").filter((l) => l.trim() !== "");
    assert.equal(out.code, 2, out.stdout + out.stderr);
    assert.equal(lines.length, 1, out.stderr);
    assert.ok(!(out.stdout + out.stderr).includes(passwordOf(databaseUrl)), "the password printed");
    assert.ok(seconds < REFUSED_START_S, `took ${seconds.toFixed(1)} s`);
    return { line: lines[0], seconds };
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
}

/**
 * A relay from 127.0.0.2 to the server on 127.0.0.1: the same server under an address its certificate does
 * not name (Linux routes all of 127/8 to loopback).
 */
function otherAddress(port: number): { url: (url: string) => string; close: () => Promise<void> } {
  const listener = Deno.listen({ hostname: "127.0.0.2", port: 0 });
  const conns: Deno.Conn[] = [];
  const pipes: Promise<unknown>[] = [];
  const accepting = (async () => {
    try {
      for await (const client of listener) {
        const upstream = await Deno.connect({ hostname: "127.0.0.1", port });
        conns.push(client, upstream);
        pipes.push(
          client.readable.pipeTo(upstream.writable).catch(() => {}),
          upstream.readable.pipeTo(client.writable).catch(() => {}),
        );
      }
    } catch {
      // Closed.
    }
  })();
  const relayPort = (listener.addr as Deno.NetAddr).port;
  return {
    url: (url) => url.replace(`@127.0.0.1:${port}/`, `@127.0.0.2:${relayPort}/`),
    close: async () => {
      listener.close();
      await accepting;
      for (const c of conns) {
        try {
          c.close();
        } catch {
          // Closed by its pipe.
        }
      }
      await Promise.all(pipes);
    },
  };
}

Deno.test({
  name: "openDatabase: migrated, the pool and a LISTEN client work; a silent server fails within the timeout",
  ignore: !HAVE_POSTGRES,
  fn: async () => {
    await using server = await startPostgres();
    await opened({ url: server.url, caFile: null }, async (db) => {
      const [{ version }] = await db.sql`SELECT max(version)::int AS version FROM schema_version`;
      assert.equal(version, MIGRATIONS.at(-1)!.version);
      await db.sql`INSERT INTO sessions(id) VALUES ('s1')`;
      assert.deepEqual([...await db.sql`SELECT id, last_seq FROM sessions`], [{ id: "s1", last_seq: 0 }]);
      const listener = db.listen();
      try {
        const heard: string[] = [];
        await listener.listen("open_test", (payload) => heard.push(payload));
        await db.sql`SELECT pg_notify('open_test', 'hello')`;
        await waitFor(() => heard.length > 0, "the NOTIFY heard", 5_000);
        assert.deepEqual(heard, ["hello"]);
      } finally {
        await listener.end({ timeout: 1 });
      }
    });
    // Opened again (a second replica, a restart): nothing to migrate, the rows kept.
    await opened({ url: server.url, caFile: null }, async (db) => {
      assert.equal((await db.sql`SELECT id FROM sessions`).length, 1);
    });

    // A server that takes the connection and never answers: the connect timeout, not a hang.
    const silent = listenSilent({ port: 0 });
    try {
      const url = `postgres://lvmh:hush-hush-secret@127.0.0.1:${(silent.addr as Deno.NetAddr).port}/lvmh`;
      const { error, ms } = await refusal({ url, caFile: null }, 1);
      assert.match(
        error.message,
        /^cannot reach the database at 127\.0\.0\.1:\d+\/lvmh: no answer within 1 s$/,
      );
      assert.ok(ms < 3_000, `${ms} ms`);
      console.log(`a silent server: refused after ${Math.round(ms)} ms (connect timeout 1 s)`);
    } finally {
      await silent.close();
    }
  },
});

Deno.test({
  name: "main.ts: a closed port or a wrong password exits 2 with one line naming host:port/db, no password",
  ignore: !HAVE_POSTGRES,
  fn: async () => {
    const port = freePort();
    const closed = await refusedStart(`postgres://lvmh:closed-port-secret@127.0.0.1:${port}/lvmh`);
    assert.equal(
      closed.line,
      `lvmh: cannot reach the database at 127.0.0.1:${port}/lvmh: connection refused`,
    );
    console.log(`closed port: exit 2 after ${closed.seconds.toFixed(1)} s: ${closed.line}`);

    await using server = await startPostgres();
    const wrong = server.url.replace(`:${encodeURIComponent(passwordOf(server.url))}@`, ":not-the-password@");
    assert.notEqual(wrong, server.url);
    const denied = await refusedStart(wrong);
    assert.equal(
      denied.line,
      `lvmh: cannot reach the database at 127.0.0.1:${server.port}/lvmh: ` +
        `password authentication failed for user "lvmh"`,
    );
    console.log(`wrong password: exit 2 after ${denied.seconds.toFixed(1)} s`);

    // With its schema newer than this build knows, the database is refused as well, before anything is served.
    const newer = await server.newDatabase();
    await opened({ url: newer, caFile: null }, async (db) => {
      await db.sql`INSERT INTO schema_version(version, title) VALUES (${
        MIGRATIONS.at(-1)!.version + 1
      }, 'later')`;
    });
    const ahead = await refusedStart(newer);
    assert.match(
      ahead.line,
      /^lvmh: cannot reach the database at .*: cannot migrate the schema: .*upgrade lvmh$/,
    );
  },
});

Deno.test({
  name:
    "openDatabase TLS: verify-full with the CA file, verify-ca, require, prefer and disable as libpq means them",
  ignore: !HAVE_POSTGRES,
  fn: async () => {
    await using server: Postgres = await startPostgres({ tls: true });
    const caFile = server.caFile!;
    const url = server.url;

    // verify-full with the CA: encrypted, on the pool and on the LISTEN client, by IP address and by name.
    for (
      const u of [
        withMode(url, "verify-full"),
        withMode(url.replace("@127.0.0.1:", "@localhost:"), "verify-full"),
      ]
    ) {
      await opened({ url: u, caFile }, async (db) => {
        assert.equal(await encrypted(db.sql), true, u);
        const listener = db.listen();
        try {
          assert.equal(await encrypted(listener), true);
        } finally {
          await listener.end({ timeout: 1 });
        }
      });
    }
    // A CA file without sslmode means verify-full.
    await opened({ url, caFile }, async (db) => assert.equal(await encrypted(db.sql), true));

    // Without the CA the certificate is not trusted: refused, saying what to give.
    const untrusted = await refusal({ url: withMode(url, "verify-full"), caFile: null });
    assert.match(
      untrusted.error.message,
      new RegExp(
        `^cannot reach the database at 127\\.0\\.0\\.1:${server.port}/lvmh: TLS: the server's ` +
          `certificate is not trusted: .*LVMH_DATABASE_CA_FILE\\)$`,
      ),
    );
    const untrustedStart = await refusedStart(withMode(url, "verify-ca"));
    assert.match(
      untrustedStart.line,
      /^lvmh: cannot reach the database at .*: TLS: the server's certificate/,
    );

    // Under an address the certificate does not name: verify-full refuses, verify-ca (the chain only) accepts.
    const relay = otherAddress(server.port);
    try {
      const misnamed = await refusal({ url: withMode(relay.url(url), "verify-full"), caFile });
      assert.match(
        misnamed.error.message,
        /127\.0\.0\.2:\d+\/lvmh: TLS: the server's certificate is for another host/,
      );
      await opened({ url: withMode(relay.url(url), "verify-ca"), caFile }, async (db) => {
        assert.equal(await encrypted(db.sql), true);
      });
      // require with a CA file verifies the chain as verify-ca does; without one it checks nothing.
      await opened({ url: withMode(relay.url(url), "require"), caFile }, async (db) => {
        assert.equal(await encrypted(db.sql), true);
      });
      await opened({ url: withMode(relay.url(url), "require"), caFile: null }, async (db) => {
        assert.equal(await encrypted(db.sql), true);
      });
    } finally {
      await relay.close();
    }

    // prefer (also the default without a CA) uses TLS when offered; disable does not.
    await opened({ url: withMode(url, "prefer"), caFile: null }, async (db) => {
      assert.equal(await encrypted(db.sql), true);
    });
    await opened({ url, caFile: null }, async (db) => assert.equal(await encrypted(db.sql), true));
    await opened({ url: withMode(url, "disable"), caFile: null }, async (db) => {
      assert.equal(await encrypted(db.sql), false);
    });

    // A daemon started with verify-full and the CA file serves, its connection encrypted.
    const dataDir = await Deno.makeTempDir({ prefix: "lvmh-dbopen-" });
    try {
      await using daemon = await startDaemon({
        dataDir,
        env: { LVMH_DATABASE_URL: withMode(url, "verify-full"), LVMH_DATABASE_CA_FILE: caFile },
      });
      assert.equal((await daemon.api("/api/health")).status, 200);
      assert.ok(!daemon.output().includes(passwordOf(url)));
      const admin = postgres(server.adminUrl, { max: 1, onnotice: () => {} });
      try {
        const [{ n }] =
          await admin`SELECT count(*)::int AS n FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
          WHERE a.datname = 'lvmh' AND s.ssl AND a.usename = 'lvmh'`;
        assert.ok(n >= 1, `${n} encrypted connections from the daemon`);
      } finally {
        await admin.end({ timeout: 1 });
      }
    } finally {
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name:
    "openDatabase TLS: sslmode=require against a server without TLS is refused, saying so; prefer falls back",
  ignore: !HAVE_POSTGRES,
  fn: async () => {
    await using server = await startPostgres();
    const { error, ms } = await refusal({ url: withMode(server.url, "require"), caFile: null });
    assert.equal(
      error.message,
      `cannot reach the database at 127.0.0.1:${server.port}/lvmh: ` +
        "the server does not offer TLS, which sslmode=require requires",
    );
    assert.ok(ms < CONNECT_TIMEOUT * 1000, `${ms} ms`);
    const start = await refusedStart(withMode(server.url, "verify-full"));
    assert.match(start.line, /: the server does not offer TLS, which sslmode=verify-full requires$/);
    await opened({ url: withMode(server.url, "prefer"), caFile: null }, async (db) => {
      assert.equal(await encrypted(db.sql), false);
    });
  },
});
