/**
 * Indexing a database whose events predate the search index, in the background: small steps, each its own
 * transaction, one per timer tick, so ingest's transactions run between them and never wait long. Progress is
 * kept in the file, so a restart goes on where it stopped.
 */
import type { WriteGate } from "../write_gate.ts";
import type { SqliteSearch } from "./sqlite_index.ts";

/** Events read per step: ~5–15 ms of work here, short enough to sit between two ingest batches. */
export const BACKFILL_STEP_ROWS = 500;
/** How often progress is logged. */
const LOG_EVERY_MS = 5000;
/** Pause after a refused write (disk full, locked) before trying again. */
const RETRY_MS = 1000;

/**
 * Start indexing what predates the index, when anything does; logs the start, progress and the end.
 * @returns a function that stops it (what is done stays done).
 */
export function startBackfill(
  search: SqliteSearch,
  gate: WriteGate,
  log: (line: string) => void = console.log,
): () => void {
  const first = search.backfillState();
  if (!first) return () => {};
  const started = performance.now();
  let lastLog = started;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  log(`lvmh: search: indexing the events stored before the index existed (up to row ${first.end})`);
  const step = () => {
    if (stopped) return;
    let state;
    try {
      state = gate.run(() => {
        search.db.exec("BEGIN IMMEDIATE");
        try {
          const after = search.backfillStep(BACKFILL_STEP_ROWS);
          search.db.exec("COMMIT");
          return after;
        } catch (error) {
          if (search.db.isTransaction) search.db.exec("ROLLBACK");
          throw error;
        }
      });
    } catch (error) {
      log(`lvmh: search: indexing paused: ${(error as Error).message}`);
      timer = setTimeout(step, RETRY_MS);
      return;
    }
    const now = performance.now();
    if (!state) {
      log(`lvmh: search: indexed the earlier events in ${((now - started) / 1000).toFixed(1)} s`);
      return;
    }
    if (now - lastLog >= LOG_EVERY_MS) {
      lastLog = now;
      log(`lvmh: search: indexing earlier events, ${Math.floor((100 * state.next) / state.end)}% done`);
    }
    timer = setTimeout(step, 0);
  };
  timer = setTimeout(step, 0);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
