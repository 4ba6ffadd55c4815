/**
 * What the storage contract tests (tests/process/*_contract_test.ts) and their PostgreSQL-only companions share: one
 * backend's test with its server, a case's opened stores closed whatever the case did, and the wait for a
 * replica's first wake-up hint.
 */
import postgres from "postgres";
import { type Postgres, postgresBinDir, startPostgres } from "./postgres.ts";

/** Whether a PostgreSQL server can be started here: the postgres tests are ignored otherwise. */
export const HAVE_POSTGRES = (await postgresBinDir()) !== null;

/** The server of the postgres test running now (started and closed by `contractTest`). */
let server: Postgres | null = null;

/** The running postgres test's server. */
export function runningServer(): Postgres {
  if (!server) throw new Error("no PostgreSQL server: outside a postgres contractTest or postgresTest");
  return server;
}

/** A client of the running server's superuser, one connection (to kill backends, to look at them). */
export function adminClient(): postgres.Sql {
  return postgres(runningServer().adminUrl, { max: 1, onnotice: () => {} });
}

/** A fresh database on the running postgres test's server: each case has its own. */
export function newDatabase(): Promise<string> {
  return runningServer().newDatabase();
}

/**
 * One backend's test of a contract, named `title`: for `backend` "postgres" a server runs for the test's
 * length (see `newDatabase`), and the test is ignored where PostgreSQL is not installed.
 */
export function contractTest(
  title: string,
  backend: string,
  fn: (t: Deno.TestContext) => Promise<void>,
): void {
  Deno.test({
    name: title,
    ignore: backend === "postgres" && !HAVE_POSTGRES,
    fn: async (t) => {
      if (backend === "postgres") server = await startPostgres();
      try {
        await fn(t);
      } finally {
        await server?.close();
        server = null;
      }
    },
  });
}

/** A test of what only PostgreSQL has, with its server (see `contractTest`). */
export function postgresTest(title: string, fn: (t: Deno.TestContext) => Promise<void>): void {
  contractTest(title, "postgres", fn);
}

/** Runs a case's body with what `open` opened, and closes that whatever the body did. */
export function opening<T extends { close(): Promise<void> }>(
  open: () => Promise<T>,
): (fn: (opened: T) => Promise<void>) => Promise<void> {
  return async (fn) => {
    const opened = await open();
    try {
      await fn(opened);
    } finally {
      await opened.close();
    }
  };
}

/** Anything that hints a session's id to its subscribers (a command queue, an approval log). */
export interface Hinting {
  subscribe(onHint: (sessionId: string) => void): () => void;
}

/** Resolves with the ms from arming to the first hint for `sessionId`, rejects past the deadline. */
export function firstHint(source: Hinting, sessionId: string, deadlineMs: number): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`no hint for ${sessionId} within ${deadlineMs} ms`));
    }, deadlineMs);
    const stop = source.subscribe((id) => {
      if (id !== sessionId) return;
      clearTimeout(timer);
      stop();
      resolve(performance.now() - t0);
    });
  });
}

/** The backends LISTENing on database `db`, once their LISTEN has finished. */
export async function listeners(admin: postgres.Sql, db: string): Promise<number[]> {
  const rows = await admin`SELECT pid FROM pg_stat_activity
    WHERE datname = ${db} AND state = 'idle' AND query ILIKE 'listen%'`;
  return rows.map((r) => Number(r.pid));
}

/** Closes every part of each replica (an object of stores), in order, as a case's `reopen` and `close` do. */
export async function closeReplicas<R extends { [K in keyof R]: { close(): Promise<void> } }>(
  ...replicas: R[]
): Promise<void> {
  for (const replica of replicas) {
    for (const part of Object.values(replica) as { close(): Promise<void> }[]) await part.close();
  }
}
