/**
 * The audit log behind an async interface, so that several replicas on one database append to one log. Two
 * implementations (SQLite over lib/audit.ts's table, PostgreSQL) pass one contract
 * (tests/process/token_audit_contract_test.ts). The semantics are lib/audit.ts's: append-only, one row per human action
 * and per failed sign-in, read in id order by pages (`id > after`); an append never fails the action it
 * records; a detail longer than `MAX_DETAIL_CHARS` is kept cut. There is no retention: rows stay.
 *
 * Order across replicas: ids are gap-free and commit in id order (PostgreSQL numbers them from a counter row
 * locked to commit, not from a sequence, whose numbers commit out of order), so a reader paging with
 * `after` never skips a row that commits later.
 */
import type { AuditEntry } from "../protocol.ts";
import type { Role } from "../token_store.ts";

/** What an action appends. */
export interface AuditInput {
  actor: string;
  role: Role | null;
  action: string;
  sessionId?: string | null;
  detail?: unknown;
}

export type { AuditEntry };

/** Longest detail kept per row, as lib/audit.ts keeps it (a prompt's text beyond it is cut). */
export const MAX_DETAIL_CHARS = 20_000;
/** The most rows one page holds (`GET /api/audit` asks for at most this). */
export const MAX_PAGE = 1_000;

/** The audit log of a deployment. */
export interface AuditLog {
  /** Which database holds it. */
  readonly kind: "sqlite" | "postgres";
  /**
   * Append a row stamped with this replica's clock. Never rejects: a full disk or an unreachable database must
   * not turn an action that already happened into an error (the failure is logged, without the detail).
   */
  append(entry: AuditInput): Promise<void>;
  /** Rows with id above `after`, oldest first, at most `limit` (capped at `MAX_PAGE`). */
  page(after: number, limit: number): Promise<AuditEntry[]>;
  /** Release connections; unusable afterwards. */
  close(): Promise<void>;
}

/** A detail as stored: JSON text (key order kept, unlike jsonb), cut as lib/audit.ts cuts it; null for none. */
export function detailText(detail: unknown): string | null {
  const text = detail === undefined ? null : JSON.stringify(detail);
  return text && text.length > MAX_DETAIL_CHARS
    ? JSON.stringify({ truncated: text.slice(0, MAX_DETAIL_CHARS) })
    : text;
}

/** A stored row's detail back as a value. */
export function detailValue(text: string | null): unknown {
  return text === null ? null : JSON.parse(text);
}
