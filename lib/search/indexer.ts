/**
 * Keeps the search index up with the events, behind ingest (lib/search/sqlite_index.ts says why): small steps,
 * each its own transaction, run once ingest has paused for a moment, so its transactions never wait behind
 * one, and at least every `MAX_WAIT_MS` under unbroken ingest, so the index never stops catching up.
 * Searches read what it has not reached yet. Progress is kept in the file, so a restart goes on where it
 * stopped; a large backlog (a file from before the index, or met for the first time) is logged.
 *
 * A step is sized to take about `STEP_BUDGET_MS`, not a fixed number of rows: the event loop is blocked while
 * it runs, and a live delta that arrives then waits for it. Steps of 500 rows took 4–10 ms and made up a
 * good part of the daemon's stalls with 3,000 sessions connected (bench/latency.ts); steps of ~2 ms, one a
 * second under that load, still set several of a round's slowest deltas (0.9–4.4 ms each). "Quiet" only
 * means no batch was stored: a streaming answer's deltas keep coming, so the steps stay short then too.
 */
import type { WriteGate } from "../write_gate.ts";
import { traced } from "../delta_trace.ts";
import type { IndexLag, SqliteSearch } from "./sqlite_index.ts";

/** Events read per step at most (~5–15 ms of work here). */
export const INDEX_STEP_ROWS = 500;
/** …and at least, so a slow step (a GC inside it) does not shrink the next ones to nothing. */
export const MIN_STEP_ROWS = 5;
/** The time a step aims at: about what one commit of ingest holds the loop (0.2–0.4 ms under load). */
export const STEP_BUDGET_MS = 0.5;
/** A step waits until no batch was stored for this long… */
const QUIET_MS = 25;
/** …but not longer than this: under unbroken ingest, 4 steps a second (the index time of one 2 ms step). */
const MAX_WAIT_MS = 250;
/** How often an index that has caught up looks for new events. */
const IDLE_MS = 250;
/** A backlog worth telling the log about. */
const LOGGED_BACKLOG = 1000;
/** How often progress is logged. */
const LOG_EVERY_MS = 5000;
/** Pause after a refused write (disk full, locked) before trying again. */
const RETRY_MS = 1000;

/**
 * Start following the events.
 * @param lastAppendAt when ingest last stored a batch (`performance.now()`)
 * @returns a function that stops it (what is indexed stays indexed).
 */
export function startIndexer(
  search: SqliteSearch,
  gate: WriteGate,
  lastAppendAt: () => number,
  log: (line: string) => void = console.log,
): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  let waitingSince: number | null = null;
  /** A logged backlog being worked off: when it started, and when progress was last logged. */
  let backlog: { started: number; logged: number } | null = null;

  const first = search.lag();
  if (first && first.top - first.upto >= LOGGED_BACKLOG) {
    log(`lvmh: search: indexing the events stored before the index existed (up to row ${first.top})`);
    backlog = { started: performance.now(), logged: performance.now() };
  }

  const pace = new IndexPace();
  const step = () => {
    if (stopped) return;
    const now = performance.now();
    waitingSince ??= now;
    if (now - lastAppendAt() < QUIET_MS && now - waitingSince < MAX_WAIT_MS) {
      timer = setTimeout(step, QUIET_MS);
      return;
    }
    waitingSince = null;
    let lag;
    try {
      lag = traced("search index", () =>
        gate.run(() => {
          search.db.exec("BEGIN IMMEDIATE");
          try {
            const after = pace.step((rows) => search.indexStep(rows));
            search.db.exec("COMMIT");
            return after;
          } catch (error) {
            if (search.db.isTransaction) search.db.exec("ROLLBACK");
            throw error;
          }
        }));
    } catch (error) {
      log(`lvmh: search: indexing paused: ${(error as Error).message}`);
      timer = setTimeout(step, RETRY_MS);
      return;
    }
    const done = performance.now();
    if (backlog && !lag) {
      log(`lvmh: search: indexed the earlier events in ${((done - backlog.started) / 1000).toFixed(1)} s`);
      backlog = null;
    } else if (backlog && lag && done - backlog.logged >= LOG_EVERY_MS) {
      backlog.logged = done;
      log(`lvmh: search: indexing earlier events, ${Math.floor((100 * lag.upto) / lag.top)}% done`);
    }
    timer = setTimeout(step, lag ? 0 : IDLE_MS);
  };
  timer = setTimeout(step, 0);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/** Sizes index steps to take about `STEP_BUDGET_MS`, from the time per row the steps so far took. */
export class IndexPace {
  /** An average over recent steps; the first step assumes ~25k rows/s, what this machine indexes. */
  #msPerRow = 0.04;
  #now: () => number;

  /** @param now the clock (tests drive their own) */
  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  /** The rows the next step should read. */
  get rows(): number {
    return Math.max(MIN_STEP_ROWS, Math.min(INDEX_STEP_ROWS, Math.floor(STEP_BUDGET_MS / this.#msPerRow)));
  }

  /** Run one step of `this.rows` rows and learn from its time. */
  step(run: (rows: number) => IndexLag | null): IndexLag | null {
    const rows = this.rows;
    const t0 = this.#now();
    const lag = run(rows);
    // Only a full step tells the time per row (a step that caught up read fewer). A moving average: one step
    // slowed by a GC or a busy disk moves the size by a third of its error.
    if (lag) this.#msPerRow = 0.7 * this.#msPerRow + 0.3 * ((this.#now() - t0) / rows);
    return lag;
  }
}
