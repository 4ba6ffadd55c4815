/**
 * Which browsers show the page right now, heard by every replica. A page reports it is shown to whichever
 * replica the load balancer picks, while a push goes out from the replica that holds the session
 * (lib/notify/start.ts): each report is sent to the others as a NOTIFY hint on the shared database. Losing
 * one costs at most a push to a page that was shown (reports are renewed while it stays shown), so a hint,
 * not a row, is enough.
 */
import type { SharedDatabase } from "../storage/open.ts";
import { LISTENER_PING_MS, PgListener } from "../storage/pg_listener.ts";

/** The NOTIFY channel of visibility reports. */
export const VISIBILITY_CHANNEL = "lvmh_push_visible";

/** One browser's page shown or hidden (each replica times it by its own clock, when it hears it). */
export interface VisibilityReport {
  endpoint: string;
  visible: boolean;
}

/** Tells the other replicas of the reports made here, and this one of theirs. */
export interface VisibilityShare {
  /** Hear the other replicas' reports (and this one's own, which are already applied). */
  start(onReport: (report: VisibilityReport) => void): Promise<void>;
  /** Send a report to the others; resolves once sent (never rejects: a lost report costs one push). */
  publish(report: VisibilityReport): Promise<void>;
  close(): Promise<void>;
}

/** Reports as NOTIFY hints on the replicas' database. */
export class PgVisibilityShare implements VisibilityShare {
  #db: SharedDatabase;
  #listener: PgListener | null = null;

  constructor(db: SharedDatabase) {
    this.#db = db;
  }

  start(onReport: (report: VisibilityReport) => void): Promise<void> {
    this.#listener ??= new PgListener({
      channel: VISIBILITY_CHANNEL,
      connect: this.#db.listen,
      pool: this.#db.sql,
      onHint: (payload) => {
        const report = parse(payload);
        if (report) onReport(report);
      },
      onListen: () => {},
      active: () => true,
      pingMs: LISTENER_PING_MS,
    });
    return this.#listener.start();
  }

  async publish(report: VisibilityReport): Promise<void> {
    await this.#db.sql`SELECT pg_notify(${VISIBILITY_CHANNEL}, ${JSON.stringify(report)})`.catch(() => {
      // The database is away: the page's next report (it renews them while shown) tries again.
    });
  }

  async close(): Promise<void> {
    await this.#listener?.close();
  }
}

function parse(payload: string): VisibilityReport | null {
  try {
    const r = JSON.parse(payload) as Partial<VisibilityReport>;
    return typeof r.endpoint === "string" && typeof r.visible === "boolean"
      ? { endpoint: r.endpoint, visible: r.visible }
      : null;
  } catch {
    return null;
  }
}
