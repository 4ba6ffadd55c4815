/**
 * The kinds whose rows go over table by table with only renamed columns, and the few values that need saying:
 * counters past the copied ids, the hooks' settings under their prefix, the key pair's one row.
 */
import type { DatabaseSync } from "node:sqlite";
import { HOOK_PREFIX } from "../settings_log.ts";
import { type Copier, countCheck, sqliteHas, sqliteNumber, type Tx } from "./copier.ts";
import { copyTable } from "./table_copy.ts";

/** A kind of one or more tables copied as they are, counted table by table. */
function plain(
  kind: string,
  tables: [from: string, to: string, orderBy?: string][],
  extra: string[] = [],
): Copier {
  return {
    kind,
    sqliteTables: [...tables.map(([from]) => from), ...extra],
    pgTables: tables.map(([, to]) => to),
    async copy(src: DatabaseSync, tx: Tx) {
      for (const [from, to, orderBy] of tables) await copyTable(src, tx, { from, to, orderBy });
    },
    checks: tables.map(([from, to]) => countCheck(from, to)),
  };
}

/** `id` is Postgres's own (it breaks ties in the creation order): inserting in that order keeps the list's. */
export const tokensCopier = plain("tokens", [["tokens", "tokens", "createdAt, rowid"]]);

export const auditCopier: Copier = {
  kind: "audit",
  sqliteTables: ["audit"],
  pgTables: ["audit", "audit_counter"],
  async copy(src, tx) {
    await copyTable(src, tx, { from: "audit", to: "audit" });
    // AUTOINCREMENT never reuses an id, even one retention deleted: the counter starts past both.
    const last = Math.max(
      sqliteNumber(src, "SELECT max(id) FROM audit"),
      sqliteHas(src, "sqlite_sequence")
        ? sqliteNumber(src, "SELECT seq FROM sqlite_sequence WHERE name = 'audit'")
        : 0,
    );
    await tx`UPDATE audit_counter SET last_id = greatest(last_id, ${last})`;
  },
  checks: [countCheck("audit"), {
    label: "audit: counter",
    sqlite: (src) =>
      Math.max(
        sqliteNumber(src, "SELECT max(id) FROM audit"),
        sqliteHas(src, "sqlite_sequence")
          ? sqliteNumber(src, "SELECT seq FROM sqlite_sequence WHERE name = 'audit'")
          : 0,
      ),
    pg: async (sql) => Number((await sql`SELECT last_id FROM audit_counter`)[0]?.last_id ?? 0),
  }],
};

export const approvalsCopier = plain("approvals", [["approvals", "approvals"]]);

/**
 * Claims and their leases belong to the stopped daemon: the deliveries go over unclaimed with their attempts
 * and next time, and the first replica claims them afresh.
 */
export const webhooksCopier = plain("webhooks", [
  ["webhook_endpoints", "webhook_endpoints", "createdAt, rowid"],
  ["webhook_outbox", "webhook_outbox"],
  ["webhook_attempts", "webhook_attempts", "seq"],
], ["webhook_claims"]);

/** Likewise the kept prompts' leases. */
export const hooksCopier = plain("hooks", [
  ["hook_deliveries", "hook_deliveries"],
  ["hook_spawned", "hook_spawned"],
  ["hook_prompts", "hook_prompts"],
], ["hook_prompt_leases"]);

export const pushCopier: Copier = {
  kind: "push",
  sqliteTables: ["push_keys", "push_subscriptions"],
  pgTables: ["push_keys", "push_subscriptions"],
  async copy(src, tx) {
    await copyTable(src, tx, {
      from: "push_keys",
      to: "push_keys",
      columns: { only_row: "1" },
      dropped: ["id"],
    });
    await copyTable(src, tx, { from: "push_subscriptions", to: "push_subscriptions" });
  },
  checks: [countCheck("push_keys"), countCheck("push_subscriptions")],
};

/** SQLite keeps the hooks' settings in their own table under the name without the prefix; Postgres, in one. */
export const settingsCopier: Copier = {
  kind: "settings",
  sqliteTables: ["settings", "hook_settings"],
  pgTables: ["settings"],
  async copy(src, tx) {
    await copyTable(src, tx, { from: "settings", to: "settings" });
    const prefix = HOOK_PREFIX.replaceAll("'", "''");
    await copyTable(src, tx, {
      from: "hook_settings",
      to: "settings",
      columns: { key: `'${prefix}' || key` },
    });
  },
  checks: [{
    ...countCheck("settings"),
    sqlite: (src) =>
      ["settings", "hook_settings"].reduce(
        (n, t) => n + (sqliteHas(src, t) ? sqliteNumber(src, `SELECT count(*) FROM ${t}`) : 0),
        0,
      ),
  }],
};

export const imagesCopier = plain("images", [["image_blobs", "image_blobs"], [
  "session_images",
  "session_images",
]]);

export const mergeRequestsCopier = plain("merge requests", [[
  "session_merge_requests",
  "session_merge_requests",
]]);

/**
 * Kinds whose Postgres tables come with a later migration: copied by name when the migrated schema has them,
 * listed as not copied until then.
 */
export const budgetsCopier = plain("budgets", [["session_budgets", "session_budgets"]]);
export const workspacesCopier = plain("workspaces", [["session_workspaces", "session_workspaces"]]);
export const containersCopier = plain("containers", [["session_containers", "session_containers"]]);
export const usageCopier = plain("usage runs", [["usage_runs", "usage_runs"]]);
