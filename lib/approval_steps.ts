/**
 * The order in which the approvals owner (lib/approvals.ts) works: each session's steps one after another
 * (after the owner's start-up load), and a plugin's step that the log refused tried again after a pause.
 * Apart from the owner because it is only scheduling: it holds promises and timers, never an approval, and
 * runs what the owner hands it.
 */

/**
 * A plugin's write that the log refused (SQLite's file refusing writes, PostgreSQL away) is tried again after
 * these pauses, the session's later writes waiting behind it; past them it is given up (logged), and the
 * plugin asks again after its next reconnect.
 */
export const RETRY_MS = [250, 500, 1_000, 2_000, 4_000, 8_000, 15_000, 30_000];

/** Each session's steps in order, and a plugin's steps tried again. */
export class ApprovalSteps {
  /** The last step queued for each session with work in flight (it never rejects). */
  #tails = new Map<string, Promise<void>>();
  /** While the owner's start-up load runs: every session's steps wait for it. */
  #loading: Promise<void> | null = null;
  #closed = false;
  /** Ends the retry pauses at `close()`. */
  #wake = new Set<() => void>();

  /** Whether `close()` was called: refused writes are no longer tried again. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Every step queued from now until `load` settles (either way) waits for it. */
  waitFor(load: Promise<unknown>): void {
    const loading = load.then(() => {}, () => {});
    this.#loading = loading;
    void loading.then(() => {
      if (this.#loading === loading) this.#loading = null;
    });
  }

  /** Run `work` after every step queued before it for the session (and after the load `waitFor` was given). */
  run<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    const before = this.#tails.get(sessionId) ?? this.#loading;
    // With nothing before it, it starts now: on SQLite its first write is then made during this call.
    const run = before ? before.then(work) : work();
    const tail = run.then(() => {}, () => {});
    this.#tails.set(sessionId, tail);
    void tail.then(() => {
      if (this.#tails.get(sessionId) === tail) this.#tails.delete(sessionId);
    });
    return run;
  }

  /**
   * A plugin's step: when the log refuses it, logged and tried again (the session's later steps wait), given
   * up after `RETRY_MS` or at `close()`; the plugin asks again with `hello.waiting` after its next reconnect.
   * Never rejects.
   * @param what the step in the log's lines, e.g. `request <approvalId>`.
   */
  retried(sessionId: string, what: string, work: () => Promise<void>): Promise<void> {
    return this.run(sessionId, async () => {
      for (let attempt = 0;; attempt++) {
        try {
          await work();
          if (attempt) {
            console.error(`lvmh: session ${sessionId}: approval ${what} stored after ${attempt} retries`);
          }
          return;
        } catch (error) {
          const pause = RETRY_MS[attempt];
          const message = (error as Error).message;
          if (this.#closed || pause === undefined) {
            console.error(`lvmh: session ${sessionId}: approval ${what} not stored, given up: ${message}`);
            return;
          }
          if (attempt === 0) {
            console.error(
              `lvmh: session ${sessionId}: approval ${what} not stored, trying again: ${message}`,
            );
          }
          await this.#pause(pause);
        }
      }
    });
  }

  /** Stop trying refused steps again; resolves when every step queued has finished. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const wake of this.#wake) wake();
    await Promise.all([...this.#tails.values()]);
  }

  #pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#wake.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#wake.add(done);
    });
  }
}
