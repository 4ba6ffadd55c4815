/**
 * The daemon's parts, built once by `lib/daemon.ts` and handed to every route as `ctx.app`.
 */
import type { Config } from "./config.ts";
import type { Store } from "./store.ts";
import type { Hub } from "./hub.ts";
import type { Ingest } from "./ingest.ts";
import type { Sessions } from "./sessions.ts";
import type { Approvals } from "./approvals.ts";
import type { Spawner } from "./spawner.ts";
import type { Gitlab } from "./gitlab.ts";
import type { Tokens } from "./tokens.ts";
import type { Audit } from "./audit.ts";
import type { SigninThrottle } from "./signin_throttle.ts";
import type { Webhooks } from "./webhooks/webhooks.ts";
import type { Hooks } from "./hooks/hooks.ts";
import type { Push } from "./notify/push.ts";

export interface App {
  config: Config;
  /** SQLite: the event log, session rows and settings (read here; session rows change only via `sessions`). */
  store: Store;
  /** Batches plugin events into one transaction per tick, then publishes them. */
  ingest: Ingest;
  /** Fans frames out to browser subscribers. */
  hub: Hub;
  /** The session registry: rows, live plugin links, ask sets, the "sessions changed" signal. */
  sessions: Sessions;
  /** Tool calls waiting for a person, and the answers. */
  approvals: Approvals;
  /** Named tokens and their roles. */
  tokens: Tokens;
  /** The append-only audit log. */
  audit: Audit;
  /** Failed sign-ins per address. */
  signins: SigninThrottle;
  /** Outbound webhook endpoints and their outbox. */
  webhooks: Webhooks;
  /** Web push: VAPID keys and browsers' subscriptions. */
  push: Push;
  /** Starts agent sessions in containers. */
  spawner: Spawner;
  /** The GitLab connection (token kept in the store's settings). */
  gitlab: Gitlab;
  /** Inbound hooks: the GitLab hook secret, replayed deliveries, the work a hook asks for. */
  hooks: Hooks;
}

/** The daemon's own parts, which the spawner and GitLab connection are built on. */
export type AppCore = Omit<App, "spawner" | "gitlab" | "hooks">;
