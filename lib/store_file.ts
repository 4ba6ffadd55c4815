/**
 * The store's SQLite file as lib/store.ts opens it: WAL, the tables of the event log, the sessions and the
 * settings, and the columns later releases added to files an older one made. Apart from the store so that it
 * reads as what it does with the file, not how the file got its shape; only the store calls it.
 */
import { DatabaseSync } from "node:sqlite";

/**
 * How long opening the file waits for another process's lock: nothing is served yet, so waiting costs no one,
 * and a start that gives up says so in one line (exit 2).
 */
export const OPEN_BUSY_TIMEOUT_MS = 5000;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS events(
  sessionId TEXT NOT NULL, seq INTEGER NOT NULL, ts INTEGER NOT NULL, type TEXT NOT NULL, payload TEXT NOT NULL,
  PRIMARY KEY(sessionId, seq));
CREATE TABLE IF NOT EXISTS sessions(
  id TEXT PRIMARY KEY, info TEXT NOT NULL, lastSeq INTEGER NOT NULL DEFAULT 0, lastEventAt INTEGER,
  online INTEGER DEFAULT 0, state TEXT NOT NULL DEFAULT 'idle');
CREATE TABLE IF NOT EXISTS settings(key TEXT PRIMARY KEY, value TEXT NOT NULL);
`;
/** Columns added after the first release, with their definitions (added to older files at open). */
const ADDED_SESSION_COLUMNS: Record<string, string> = { ask: "TEXT" };

/** A row of the sessions table, as the store keeps it in memory. */
export interface SessionRow {
  id: string;
  info: string;
  lastSeq: number;
  lastEventAt: number | null;
  state: string;
  /** The session's own ask set as JSON, or null for the daemon's default. */
  ask: string | null;
}

/**
 * Open (creating if needed) the database at `path` with the store's tables and columns, waiting up to
 * `OPEN_BUSY_TIMEOUT_MS` for another process's lock.
 * @throws {Error} when the file cannot be opened or is not an lvmh database.
 */
export function openStoreFile(path: string): DatabaseSync {
  const db = new DatabaseSync(path);
  db.exec(`PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=${OPEN_BUSY_TIMEOUT_MS};`);
  db.exec(SCHEMA);
  const have = new Set(
    (db.prepare("PRAGMA table_info(sessions)").all() as { name: string }[]).map((c) => c.name),
  );
  for (const [name, type] of Object.entries(ADDED_SESSION_COLUMNS)) {
    if (!have.has(name)) db.exec(`ALTER TABLE sessions ADD COLUMN ${name} ${type}`);
  }
  return db;
}
