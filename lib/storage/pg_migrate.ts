/**
 * The PostgreSQL schema, versioned: each migration runs once, in order, at start. All of them run in one
 * transaction under an advisory lock, so replicas starting together wait for each other and the schema is
 * migrated once; a failed migration leaves the database as it was.
 */
import { type ConnectOptions, connectPostgres, type Sql } from "./pg_client.ts";
import { PG_APPEND_FUNCTION } from "./pg_append.ts";

/** One step of the schema. */
export interface Migration {
  version: number;
  /** What it adds, for the logs. */
  title: string;
  sql: string;
}

/** The key of the advisory lock migrations take ("lvmh" in ASCII): every replica uses the same one. */
export const MIGRATION_LOCK = 0x6c766d68;

/** Every migration, oldest first. Never edit one that shipped: add the next. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    title:
      "sessions with their seq counter and holder epoch, the event log, appends numbered from the counter",
    sql: `
CREATE TABLE sessions(
  id text PRIMARY KEY,
  info text NOT NULL DEFAULT '{}',
  last_seq bigint NOT NULL DEFAULT 0,
  last_event_at bigint,
  state text NOT NULL DEFAULT 'idle',
  ask text,
  holder text,
  holder_epoch bigint NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE events(
  session_id text NOT NULL,
  seq bigint NOT NULL,
  ts bigint NOT NULL,
  type text NOT NULL,
  payload text NOT NULL,
  PRIMARY KEY(session_id, seq));
${PG_APPEND_FUNCTION}`,
  },
  {
    version: 2,
    title: "commands to a session's holder, numbered from the session's command counter",
    // The counter sits on the session row, whose lock orders concurrent enqueuers as appends are ordered;
    // commands go with their session (cascade); the partial indexes keep the sweep and the pruning cheap.
    sql: `
ALTER TABLE sessions ADD COLUMN last_cmd_pos bigint NOT NULL DEFAULT 0;
CREATE TABLE commands(
  session_id text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  pos bigint NOT NULL,
  frame text NOT NULL,
  enqueued_at bigint NOT NULL,
  taken_epoch bigint,
  acked_at bigint,
  PRIMARY KEY(session_id, pos));
CREATE INDEX commands_waiting ON commands(session_id, pos) WHERE acked_at IS NULL;
CREATE INDEX commands_acked ON commands(acked_at) WHERE acked_at IS NOT NULL;`,
  },
  {
    version: 3,
    title: "named tokens (hashes only) and the audit log, numbered from a counter row",
    // `id` only breaks ties in the token list's creation order; audit ids come from the counter row, whose
    // lock held to commit makes them commit in order (a sequence's numbers do not); the partial index keeps
    // the replicas' sweeps for revoked names cheap.
    sql: `
CREATE TABLE tokens(
  name text PRIMARY KEY,
  role text NOT NULL,
  hash text NOT NULL UNIQUE,
  created_at bigint NOT NULL,
  last_used_at bigint,
  revoked_at bigint,
  id bigint GENERATED ALWAYS AS IDENTITY);
CREATE INDEX tokens_revoked ON tokens(revoked_at) WHERE revoked_at IS NOT NULL;
CREATE TABLE audit_counter(only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row), last_id bigint NOT NULL);
INSERT INTO audit_counter(last_id) VALUES (0);
CREATE TABLE audit(
  id bigint PRIMARY KEY,
  at bigint NOT NULL,
  actor text NOT NULL,
  role text,
  action text NOT NULL,
  session_id text,
  detail text);`,
  },
  {
    version: 4,
    title: "approvals: tool calls and budget cards waiting for a person, first answer wins",
    // The columns of the SQLite table (lib/approval_store.ts). Not tied to sessions: their owner deletes a
    // session's approvals, as on SQLite. The partial index serves the pending list and the hint sweep.
    sql: `
CREATE TABLE approvals(
  id text PRIMARY KEY,
  session_id text NOT NULL,
  tool_call_id text NOT NULL,
  tool_name text NOT NULL,
  args text NOT NULL,
  state text NOT NULL DEFAULT 'pending',
  decided_by text,
  decided_at bigint,
  reason text,
  created_at bigint NOT NULL,
  applied_at bigint,
  source text,
  kind text);
CREATE INDEX approvals_by_session ON approvals(session_id, created_at);
CREATE INDEX approvals_pending ON approvals(created_at, id COLLATE "C") WHERE state = 'pending';`,
  },
  {
    version: 5,
    title: "webhook endpoints, their outbox with claims under a lease, and the attempt log",
    // The columns of the SQLite tables (lib/webhooks/webhook_store.ts), plus the claim on the outbox row (who,
    // the claim's number, the lease's end) so replicas hand each delivery out once. No foreign keys: as on
    // SQLite, delivered and failed rows and their attempts outlive a removed endpoint. `pos` keeps endpoints
    // created in the same millisecond in insertion order; the partial index serves the claims' scan.
    sql: `
CREATE TABLE webhook_endpoints(
  id text PRIMARY KEY,
  url text NOT NULL,
  events text NOT NULL,
  secret text NOT NULL,
  created_at bigint NOT NULL,
  pos bigint GENERATED ALWAYS AS IDENTITY);
CREATE TABLE webhook_outbox(
  id text PRIMARY KEY,
  endpoint_id text NOT NULL,
  type text NOT NULL,
  body text NOT NULL,
  created_at bigint NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  next_at bigint NOT NULL,
  state text NOT NULL DEFAULT 'pending',
  last_status integer,
  last_error text,
  done_at bigint,
  claimed_by text,
  claim bigint NOT NULL DEFAULT 0,
  lease_until bigint);
CREATE INDEX webhook_outbox_due ON webhook_outbox(next_at) WHERE state = 'pending';
CREATE INDEX webhook_outbox_by_endpoint ON webhook_outbox(endpoint_id);
CREATE TABLE webhook_attempts(
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  delivery_id text NOT NULL,
  endpoint_id text NOT NULL,
  type text NOT NULL,
  at bigint NOT NULL,
  status integer,
  latency_ms integer NOT NULL,
  error text);
CREATE INDEX webhook_attempts_by_endpoint ON webhook_attempts(endpoint_id, seq);`,
  },
  {
    version: 6,
    title: "kept hook prompts claimed under a lease, hook delivery keys, web push keys and subscriptions",
    // The columns of the SQLite tables (lib/hooks/hook_store.ts, lib/notify/push_store.ts), plus the lease on a
    // kept prompt (a token replaced at each claim, its holder, its end on the database's clock) so replicas work
    // on each prompt one at a time. The key pair is one row at most, so replicas making one at once keep one.
    sql: `
CREATE TABLE hook_deliveries(key text PRIMARY KEY, source text NOT NULL, at bigint NOT NULL);
CREATE INDEX hook_deliveries_by_age ON hook_deliveries(at);
CREATE TABLE hook_spawned(key text PRIMARY KEY, session_id text NOT NULL, at bigint NOT NULL);
CREATE TABLE hook_prompts(
  id text PRIMARY KEY,
  session_id text NOT NULL,
  message text NOT NULL,
  deliver_as text NOT NULL,
  actor text NOT NULL,
  detail text NOT NULL,
  spawn text,
  created_at bigint NOT NULL,
  sent_after bigint,
  wait_idle boolean NOT NULL DEFAULT false,
  lease_token text,
  lease_owner text,
  lease_until bigint);
CREATE INDEX hook_prompts_by_age ON hook_prompts(created_at, id COLLATE "C");
CREATE TABLE push_keys(
  only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  public_key text NOT NULL,
  private_key text NOT NULL);
CREATE TABLE push_subscriptions(
  endpoint text PRIMARY KEY,
  p256dh text NOT NULL,
  auth text NOT NULL,
  kinds text NOT NULL,
  owner text NOT NULL,
  created_at bigint NOT NULL);
CREATE INDEX push_subscriptions_by_owner ON push_subscriptions(owner);`,
  },
  {
    version: 7,
    title: "settings (with a version per write), prompt images by sha256, merge request records",
    // The columns of the SQLite tables (lib/store.ts and lib/hooks/hook_store.ts settings under one key
    // space, lib/image_store.ts, lib/merge_request_record.ts). A setting's version only has to differ after
    // each write, for the replicas' sweeps, so a sequence serves. Images and records are not tied to sessions:
    // their owners delete a session's, as on SQLite (an image goes once no session holds it).
    sql: `
CREATE SEQUENCE settings_versions;
CREATE TABLE settings(
  key text PRIMARY KEY,
  value text NOT NULL,
  version bigint NOT NULL DEFAULT nextval('settings_versions'));
CREATE TABLE image_blobs(
  sha256 text PRIMARY KEY,
  mime_type text NOT NULL,
  bytes bigint NOT NULL,
  data bytea NOT NULL,
  created_at bigint NOT NULL);
CREATE TABLE session_images(
  session_id text NOT NULL,
  sha256 text NOT NULL,
  created_at bigint NOT NULL,
  PRIMARY KEY(session_id, sha256));
CREATE INDEX session_images_by_sha ON session_images(sha256);
CREATE TABLE session_merge_requests(
  session_id text PRIMARY KEY,
  repo text NOT NULL,
  source_branch text NOT NULL,
  pushed_sha text,
  iid bigint,
  web_url text,
  state text,
  target_branch text,
  title text,
  pipeline text,
  merge_status text,
  notes bigint NOT NULL DEFAULT 0,
  updated_at bigint NOT NULL,
  refreshed_at bigint NOT NULL DEFAULT 0,
  pipeline_notified bigint,
  pipeline_prompted bigint,
  pipeline_prompts integer NOT NULL DEFAULT 0);
CREATE INDEX session_merge_requests_due ON session_merge_requests(refreshed_at)
  WHERE iid IS NOT NULL AND state = 'opened';
CREATE INDEX session_merge_requests_by_branch ON session_merge_requests(repo, source_branch);`,
  },
  {
    version: 8,
    title: "per-session budgets, working copy records, worker states, usage runs",
    // The columns of the SQLite tables (lib/budget_table.ts, lib/workspaces.ts, lib/spawn/containers.ts,
    // lib/usage_runs.ts). Budget figures are double precision as SQLite stores whatever number it is given.
    // Not tied to sessions: their owners delete a session's rows, as on SQLite.
    sql: `
CREATE TABLE session_budgets(
  session_id text PRIMARY KEY,
  max_cost double precision,
  max_tokens double precision,
  on_reach text NOT NULL,
  raised_cost double precision NOT NULL DEFAULT 0,
  raised_tokens double precision NOT NULL DEFAULT 0,
  source text NOT NULL,
  updated_at bigint NOT NULL);
CREATE TABLE session_workspaces(
  session_id text PRIMARY KEY,
  repo text NOT NULL,
  base_branch text NOT NULL,
  base_sha text NOT NULL,
  branch text NOT NULL,
  created_at bigint NOT NULL);
CREATE TABLE session_containers(
  session_id text PRIMARY KEY,
  repo text NOT NULL,
  state text NOT NULL,
  exit_code integer,
  reason text,
  logs text,
  updated_at bigint NOT NULL);
CREATE TABLE usage_runs(
  session_id text NOT NULL,
  start_seq bigint NOT NULL,
  started_at bigint NOT NULL,
  person text NOT NULL,
  model text,
  input_tokens double precision NOT NULL DEFAULT 0,
  output_tokens double precision NOT NULL DEFAULT 0,
  cost double precision NOT NULL DEFAULT 0,
  counted integer NOT NULL DEFAULT 0,
  open integer NOT NULL DEFAULT 1,
  seen_seq bigint NOT NULL,
  PRIMARY KEY(session_id, start_seq));
CREATE INDEX usage_runs_by_start ON usage_runs(started_at);`,
  },
  {
    version: 9,
    title: "replicas and when each was last seen, for which sessions are online on another replica",
    // A session is online while its holder (sessions.holder) is a replica seen lately: a SIGKILLed replica
    // cannot clear its sessions' holder, its heartbeat just stops. Times are the database's clock (ms epoch),
    // so replicas' clocks need not agree.
    sql: `
CREATE TABLE replicas(id text PRIMARY KEY, seen_at bigint NOT NULL);
CREATE INDEX sessions_held ON sessions(holder) WHERE holder IS NOT NULL;`,
  },
  {
    version: 10,
    title:
      "the features the holder's plugin listed in its hello, for kept hook prompts worked on any replica",
    // Cleared by every claim and written by the new holder after its welcome: null means "not known yet for
    // this holder", so a replica delivering a kept prompt waits instead of taking the plugin for an old one.
    sql: "ALTER TABLE sessions ADD COLUMN plugin_features text;",
  },
  {
    version: 11,
    title: "spawn jobs, each written by the replica that runs it, for every replica's job list",
    // One row per job, written by its replica (lib/spawn/shared_jobs.ts) on every change; a write older than
    // the row (updated_at, the writer's clock) is refused. `found` marks a worker found again by label at a
    // start rather than spawned: hidden where the session has a spawned job. The leader prunes old ones.
    sql: `
CREATE TABLE spawn_jobs(
  id text PRIMARY KEY,
  replica text NOT NULL,
  session_id text NOT NULL,
  repo text NOT NULL,
  branch text,
  state text NOT NULL,
  container_id text,
  error text,
  found boolean NOT NULL DEFAULT false,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL);
CREATE INDEX spawn_jobs_by_created ON spawn_jobs(created_at);`,
  },
];

/** What `migrate` did. */
export interface MigrationResult {
  /** The schema version found. */
  from: number;
  /** The schema version now. */
  to: number;
  /** The versions this call applied (empty when another replica had done it). */
  applied: number[];
}

/**
 * Bring the database's schema to the newest version.
 * @throws {Error} when the database's schema is newer than this build knows (an older replica must not write
 *   to it), or when a migration fails (nothing of this call is then applied).
 */
export async function migrate(
  sql: Sql,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<MigrationResult> {
  const newest = migrations.at(-1)?.version ?? 0;
  return await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`;
    await tx`CREATE TABLE IF NOT EXISTS schema_version(
      version integer PRIMARY KEY, title text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`;
    const [{ version }] = await tx`SELECT coalesce(max(version), 0)::integer AS version FROM schema_version`;
    const from = Number(version);
    if (from > newest) {
      throw new Error(
        `The database's schema is version ${from}, newer than this lvmh's (${newest}): upgrade lvmh`,
      );
    }
    const applied: number[] = [];
    for (const m of migrations) {
      if (m.version <= from) continue;
      await tx.unsafe(m.sql);
      await tx`INSERT INTO schema_version(version, title) VALUES (${m.version}, ${m.title})`;
      applied.push(m.version);
    }
    return { from, to: Math.max(from, newest), applied };
  });
}

/**
 * Connect to `url` and migrate its schema: the pool each store's `open(url)` starts from.
 * @throws {Error} when the database cannot be reached or migrated; the pool is then closed.
 */
export async function openMigrated(url: string, options: ConnectOptions = {}): Promise<Sql> {
  const sql = connectPostgres(url, options);
  try {
    await migrate(sql);
  } catch (error) {
    await sql.end({ timeout: 1 });
    throw error;
  }
  return sql;
}
