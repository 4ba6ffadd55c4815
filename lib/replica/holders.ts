/**
 * Which sessions have their plugin socket on another replica, so every replica lists them online and accepts
 * commands for them: the session rows' holders and the replicas' heartbeats (lib/storage/pg_replicas.ts).
 *
 * Polled, not hinted: the list's online dot may lag a claim by `HOLDERS_POLL_MS`, which no command waits on
 * (a command goes into the queue whoever holds the session).
 */
import type { PgReplicas } from "../storage/pg_replicas.ts";

/** How often this replica writes its heartbeat. */
export const HEARTBEAT_MS = 2_000;
/** A replica not seen for this long holds nothing. */
export const HOLDER_STALE_MS = 10_000;
/** How often the sessions held elsewhere are read. */
export const HOLDERS_POLL_MS = 1_000;

/** The sessions other live replicas hold, kept fresh by polling. */
export class Holders {
  #rows: PgReplicas;
  #self: string;
  #elsewhere = new Set<string>();
  #onChange: (sessionIds: string[]) => void;
  #heartbeat: ReturnType<typeof setInterval> | undefined;
  #poll: ReturnType<typeof setInterval> | undefined;
  #polling = false;
  #offset = 0;

  /** @param onChange sessions whose online state (as held elsewhere) changed. */
  constructor(rows: PgReplicas, self: string, onChange: (sessionIds: string[]) => void) {
    this.#rows = rows;
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
      const now = new Set(await this.#rows.heldElsewhere(this.#self, HOLDER_STALE_MS));
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
    await this.#rows.release(sessionId, this.#self, epoch);
  }

  /** Stop beating and polling, and remove this replica's heartbeat (a clean stop). */
  async stop(): Promise<void> {
    clearInterval(this.#heartbeat);
    clearInterval(this.#poll);
    await this.#rows.forget(this.#self).catch(() => {
      // The database is away: the row goes stale by itself.
    });
  }

  /** The database's clock minus this process's, as the last heartbeat measured it (its round trip halved). */
  get clockOffset(): number {
    return this.#offset;
  }

  async #beat(): Promise<void> {
    const sent = Date.now();
    const dbNow = await this.#rows.beat(this.#self);
    const back = Date.now();
    this.#offset = Math.round(dbNow - (sent + back) / 2);
  }
}
