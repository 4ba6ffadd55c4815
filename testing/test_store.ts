/**
 * Test helper: which store the test daemons use. With `LVMH_TEST_STORE=postgres` in the test process, every
 * daemon a test starts (in-process by testing/inproc.ts, or as a process by testing/daemon.ts `startDaemon`)
 * gets a fresh database of its own on one throwaway PostgreSQL server, so the same test files prove the daemon
 * on both stores. Unset, nothing happens here and the daemons keep their SQLite file alone.
 *
 * The server starts while this module loads, before any test runs when testing/inproc.ts imports it: it
 * outlives every test of the file, and Deno's sanitizers only look at what a test opened itself. A file that
 * starts daemons with `startDaemon` alone loads it on its first daemon, inside that test (the watchdog child
 * is unref'd and the sanitizers let it be). Not with `deno test --preload`: Deno runs a preloaded module's
 * event loop dry before the tests, and the server's admin connection never lets it.
 *
 * The server stops when the test file is done (the `unload` event, synchronously: see `closeSync`), and in any
 * case when this process ends: testing/postgres.ts's watchdog stops it once nobody holds its input.
 */
import { type Postgres, postgresBinDir, startPostgres } from "./postgres.ts";

/** True when the test daemons run on PostgreSQL. */
export const TEST_STORE_POSTGRES = Deno.env.get("LVMH_TEST_STORE") === "postgres";

const server: Postgres | null = TEST_STORE_POSTGRES ? await startPostgres() : null;
if (server) globalThis.addEventListener("unload", () => server.closeSync());

/** The database of each data dir: a daemon restarted on the same data dir finds the same shared state. */
const databases = new Map<string, Promise<string>>();
/** The same, once made: for the synchronous look `sharedRowsSync` takes. */
const made = new Map<string, string>();
/** `psql`, for that look. */
const psql = server ? `${await postgresBinDir()}/psql` : null;

/**
 * The database URL of the daemon whose data dir is `dataDir`: a fresh database the first time, the same one
 * for a restart on that data dir.
 * @throws {Error} when `LVMH_TEST_STORE` is not `postgres`.
 */
export function testDatabaseUrl(dataDir: string): Promise<string> {
  if (!server) throw new Error("LVMH_TEST_STORE is not postgres: the test daemons keep SQLite");
  let url = databases.get(dataDir);
  if (!url) {
    url = server.newDatabase();
    databases.set(dataDir, url);
    void url.then((u) => made.set(dataDir, u), () => {});
  }
  return url;
}

/**
 * Run `statement` on the database of the daemon whose data dir is `dataDir` and return its rows, each one
 * line of `|`-separated fields (`psql -At`). Synchronous, as the helpers that read a daemon's SQLite file are,
 * so they can read the shared rows instead when the daemons run on PostgreSQL.
 * @throws {Error} when no daemon on `dataDir` got a database, or psql fails.
 */
export function sharedRowsSync(dataDir: string, statement: string): string[][] {
  const url = made.get(dataDir);
  if (!url || !psql) throw new Error(`no PostgreSQL database for ${dataDir}`);
  const out = new Deno.Command(psql, { args: [url, "-X", "-At", "-c", statement] }).outputSync();
  if (!out.success) throw new Error(`psql: ${new TextDecoder().decode(out.stderr)}`);
  const text = new TextDecoder().decode(out.stdout).trim();
  return text ? text.split("\n").map((line) => line.split("|")) : [];
}
