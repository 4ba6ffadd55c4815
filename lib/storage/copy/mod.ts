/**
 * Every copier, in the order the copy runs (sessions before their commands, which Postgres ties to them), and
 * the SQLite tables that are not state to move. A kind added later is one more copier here.
 */
import type { Copier } from "./copier.ts";
import { commandsCopier, eventsCopier, sessionsCopier } from "./sessions.ts";
import {
  approvalsCopier,
  auditCopier,
  budgetsCopier,
  containersCopier,
  hooksCopier,
  imagesCopier,
  mergeRequestsCopier,
  pushCopier,
  settingsCopier,
  tokensCopier,
  usageCopier,
  webhooksCopier,
  workspacesCopier,
} from "./tables.ts";

export * from "./copier.ts";
export * from "./table_copy.ts";

export const COPIERS: readonly Copier[] = [
  sessionsCopier,
  eventsCopier,
  commandsCopier,
  tokensCopier,
  auditCopier,
  approvalsCopier,
  webhooksCopier,
  hooksCopier,
  pushCopier,
  settingsCopier,
  imagesCopier,
  mergeRequestsCopier,
  budgetsCopier,
  workspacesCopier,
  containersCopier,
  usageCopier,
];

/**
 * Tables derived from the events, rebuilt rather than copied: the search index (built again from the events by
 * whoever searches them) and the session list's glances (a cache each daemon catches up from the log).
 */
export const DERIVED: Readonly<Record<string, string>> = {
  search_fts: "search index",
  search_meta: "search index",
  session_glance: "list glances",
};

/** Whether a SQLite table is SQLite's own bookkeeping (AUTOINCREMENT's counters, the FTS shadow tables…). */
export function isInternal(table: string): boolean {
  return table.startsWith("sqlite_") || /^search_fts_/.test(table);
}
