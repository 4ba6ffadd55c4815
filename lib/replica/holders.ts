/**
 * Which sessions have their plugin socket on another replica, so every replica lists them online and accepts
 * commands for them. The truth is the sessions table's `holder` column (set by `claimHolder`, cleared when the
 * holder's socket goes) and each replica's heartbeat row: a replica that was SIGKILLed cannot clear its
 * sessions' holder, so a holder counts only while its heartbeat is younger than `HOLDER_STALE_MS`.
 *
 * Polled, not hinted: the list's online dot may lag a claim by `HOLDERS_POLL_MS`, which no command waits on
 * (a command goes into the queue whoever holds the session).
 */
import type { Sql } from "../storage/pg_client.ts";

/** How often this replica writes its heartbeat. */
export const HEARTBEAT_MS = 2_000;
/** A replica not seen for this long holds nothing. */
export const HOLDER_STALE_MS = 10_000;
/** How often the sessions held elsewhere are read. */
export const HOLDERS_POLL_MS = 1_000;

/** The sessions other live replicas hold, kept fresh by polling. */
export class Holders {
  #sql: Sql;
  #self: string;
  #elsewhere = new Set<string>();
  #onChange: (sessionIds: string[]) => void;
  #heartbeat: ReturnType<typeof setInterval> | undefined;
  #poll: ReturnType<typeof setInterval> | undefined;
  #polling = false;

  /** @param onChange sessions whose online state (as held elsewhere) changed. */
  constructor(sql: Sql, self: string, onChange: (sessionIds: string[]) => void) {
    this.#sql = sql;
    this.#self = self;
    this.#onChange = onChange;
  }

  /** Write the first heartbeat and read the holders once, then keep both going. */
  async start(): Promise<void> {
    await this.#beat();
    await this.refresh();
    this.#heartbeat = setInterval(() => void this.#beat().catch(() => {}), HEARTBEAT_MS);
    this.#poll = setInterval(() => void this.refresh(), HOLDERS_POLL_MS);
  }

  /** True when a live replica other than this one holds the session. */
  heldElsewhere(sessionId: string): boolean {
    return this.#elsewhere.has(sessionId);
  }

  /** Read the sessions held by other live replicas now. */
  async refresh(): Promise<void> {
    if (this.#polling) return;
    this.#polling = true;
    try {
      const rows = await this.#sql`SELECT s.id FROM sessions s JOIN replicas r ON r.id = s.holder
        WHERE s.holder <> ${this.#self}
          AND r.seen_at > (extract(epoch FROM clock_timestamp()) * 1000)::bigint - ${HOLDER_STALE_MS}`;
      const now = new Set(rows.map((r) => r.id as string));
      const changed = [...now].filter((id) => !this.#elsewhere.has(id));
      for (const id of this.#elsewhere) if (!now.has(id)) changed.push(id);
      this.#elsewhere = now;
      if (changed.length) this.#onChange(changed);
    } catch {
      // The database is away: keep the last view; the next poll tries again.
    } finally {
      this.#polling = false;
    }
  }

  /** This replica no longer holds the session (its socket went): unless a newer holder claimed it meanwhile. */
  async release(sessionId: string, epoch: number): Promise<void> {
    await this.#sql`UPDATE sessions SET holder = NULL
      WHERE id = ${sessionId} AND holder = ${this.#self} AND holder_epoch = ${epoch}`;
  }

  /** Stop beating and polling; this replica's row stays until it goes stale (a restart beats again). */
  stop(): void {
    clearInterval(this.#heartbeat);
    clearInterval(this.#poll);
  }

  async #beat(): Promise<void> {
    await this.#sql`INSERT INTO replicas(id, seen_at)
      VALUES (${this.#self}, (extract(epoch FROM clock_timestamp()) * 1000)::bigint)
      ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at`;
  }
}
