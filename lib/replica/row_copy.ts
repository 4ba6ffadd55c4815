/**
 * A replica's synchronous copy of rows every replica writes in the shared database, for what reads them on
 * every list row (budgets, worker states, merge-request records). This replica's own writes update the copy
 * once stored (`write` around them, then `put`); another replica's are found by reading every row again every
 * poll period (`start`, `refresh`), since those tables carry no change hint. A read of every row that
 * overlapped one of this replica's writes is dropped (the next read has it), so a row just written here never
 * flickers back to what it was.
 */

export interface RowCopyOptions<Row> {
  /** Every row of the shared table. */
  readAll(): Promise<Row[]>;
  /** The session a row is of. */
  key(row: Row): string;
  /** Whether what the readers show of a session differs between two versions of its row (absent: none). */
  moved(was: Row | undefined, now: Row | undefined): boolean;
  /** Told which sessions' rows a read of every row found moved (another replica's writes, or deletions). */
  changed(sessionIds: string[]): void;
  /** What the rows are, for the line a failed periodic read logs ("budgets"). */
  what: string;
}

/** The rows, by session, as this replica last read or wrote them. */
export class RowCopy<Row> {
  #o: RowCopyOptions<Row>;
  #rows = new Map<string, Row>();
  /** Bumped before and after each of this replica's writes: a read of every row started before one is stale. */
  #writes = 0;
  #reading: Promise<Row[]> | null = null;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(options: RowCopyOptions<Row>) {
    this.#o = options;
  }

  get(sessionId: string): Row | undefined {
    return this.#rows.get(sessionId);
  }

  has(sessionId: string): boolean {
    return this.#rows.has(sessionId);
  }

  keys(): Iterable<string> {
    return this.#rows.keys();
  }

  values(): Iterable<Row> {
    return this.#rows.values();
  }

  /**
   * Read every row now, then every `pollMs` again (a failed periodic read is logged; the next one tries again).
   * @throws what the database throws on the first read (the periodic reads are on regardless).
   */
  async start(pollMs: number): Promise<void> {
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => {
        this.refresh().catch((error) => {
          // Meanwhile the copy is what was read last.
          console.error(`lvmh: ${this.#o.what} not re-read: ${(error as Error).message}`);
        });
      }, pollMs);
      Deno.unrefTimer(this.#timer);
    }
    await this.refresh();
  }

  /**
   * Read every row again: the copy takes them, and `changed` hears which moved, unless a write of this replica
   * ran meanwhile. Calls while a read is out share it.
   * @returns the rows read
   * @throws what the database throws
   */
  refresh(): Promise<Row[]> {
    this.#reading ??= this.#readAll().finally(() => this.#reading = null);
    return this.#reading;
  }

  /** Run one of this replica's writes (or a read it then `put`s): reads of every row around it are dropped. */
  async write<T>(work: () => Promise<T>): Promise<T> {
    this.#writes++;
    try {
      return await work();
    } finally {
      this.#writes++;
    }
  }

  /**
   * Take a session's row as this replica read or wrote it (null: it has none).
   * @returns whether what the readers show of it moved
   */
  put(sessionId: string, row: Row | null): boolean {
    const was = this.#rows.get(sessionId);
    if (row) this.#rows.set(sessionId, row);
    else this.#rows.delete(sessionId);
    return this.#o.moved(was, row ?? undefined);
  }

  /** Stop the periodic reads. */
  close(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  async #readAll(): Promise<Row[]> {
    const at = this.#writes;
    const rows = await this.#o.readAll();
    if (at !== this.#writes) return rows;
    const now = new Map(rows.map((r) => [this.#o.key(r), r]));
    const moved: string[] = [];
    for (const [id, row] of now) if (this.#o.moved(this.#rows.get(id), row)) moved.push(id);
    for (const [id, row] of this.#rows) if (!now.has(id) && this.#o.moved(row, undefined)) moved.push(id);
    this.#rows = now;
    if (moved.length) this.#o.changed(moved);
    return rows;
  }
}
