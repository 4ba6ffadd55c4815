/**
 * The daemon's parts: every stateful owner, built once by `createDaemon` (`lib/daemon.ts`) and handed to every
 * route as `ctx.app`. Nothing stateful lives outside this list (no module-level registry).
 */
import type { Config } from "./config.ts";
import type { Store } from "./store.ts";
import type { Hub } from "./hub.ts";
import type { Ingest } from "./ingest.ts";
import type { Sessions } from "./sessions.ts";
import type { Approvals } from "./approvals.ts";
import type { ImageLog } from "./storage/image_log.ts";
import type { Spawner } from "./spawner.ts";
import type { Gitlab } from "./gitlab.ts";
import type { Tokens } from "./tokens.ts";
import type { Audit } from "./audit.ts";
import type { Settings } from "./settings.ts";
import type { SigninThrottle } from "./signin_throttle.ts";
import type { Webhooks } from "./webhooks/webhooks.ts";
import type { Hooks } from "./hooks/hooks.ts";
import type { Push } from "./notify/push.ts";
import type { DaemonFeed } from "./daemon_feed.ts";
import type { WorkspaceBook } from "./workspaces.ts";
import type { AnyMergeRequests } from "./merge_requests_shared.ts";
import type { SessionChanges } from "./changes/session_changes.ts";
import type { SearchIndex } from "./search/types.ts";
import type { Budgets } from "./budgets.ts";
import type { UsageRuns } from "./usage_runs.ts";
import type { Presence } from "./presence.ts";
import type { Replica } from "./replica/replica.ts";
import type { Liveness } from "./liveness.ts";

export interface App {
  config: Config;
  /** This daemon's part among replicas sharing a PostgreSQL database; null for a daemon alone on its file. */
  replica: Replica | null;
  /** SQLite: the event log, session rows and settings (read here; session rows change only via `sessions`). */
  store: Store;
  /** Full-text search over every session's events (the store's index, written with the events). */
  search: SearchIndex;
  /** Batches plugin events into one transaction per tick, then publishes them. */
  ingest: Ingest;
  /** Fans frames out to browser subscribers and the in-process followers. */
  hub: Hub;
  /** The dead-peer check of plugin sockets that promised their heartbeat: one timer for all of them. */
  liveness: Liveness;
  /** The session registry: rows, live plugin links, ask sets, prompts, the "sessions changed" signal. */
  sessions: Sessions;
  /** Tool calls waiting for a person, and the answers. */
  approvals: Approvals;
  /** The images of web prompts, per session (kept by `sessions.prompt`, deleted with their session). */
  images: ImageLog;
  /** Named tokens and their roles. */
  tokens: Tokens;
  /** The append-only audit log. */
  audit: Audit;
  /** The deployment's settings (the GitLab connection, the hook secret), read from a cache every replica keeps. */
  settings: Settings;
  /** Failed sign-ins per address. */
  signins: SigninThrottle;
  /** Outbound webhook endpoints and their outbox. */
  webhooks: Webhooks;
  /** Web push: VAPID keys and browsers' subscriptions. */
  push: Push;
  /** Starts agent sessions in containers. */
  spawner: Spawner;
  /** Each spawned session's working copy: its repository, base branch and sha, and its own branch. */
  workspaces: WorkspaceBook;
  /** What changed in a session: the diff helper for spawned sessions, the plugin for terminal ones. */
  changes: SessionChanges;
  /** The GitLab connection (token kept in the store's settings). */
  gitlab: Gitlab;
  /** Spawned sessions' merge requests: pushing their work, lvmh's record of each, following it. */
  mergeRequests: AnyMergeRequests;
  /** Inbound hooks: the GitLab hook secret, replayed deliveries, the work a hook asks for. */
  hooks: Hooks;
  /** The daemon-wide SSE stream (`GET /api/stream`): the hub's broadcasts, numbered for resuming. */
  feed: DaemonFeed;
  /** Each session's budget and what it spent (counted from the log), and the daily cap. */
  budgets: Budgets;
  /** Who has each session's page open (typing or not), and who holds its wheel. */
  presence: Presence;
  /** One row per run (tokens, cost, who prompted, which model), kept from the log for usage reports. */
  usage: UsageRuns;
}
