/**
 * The daemon's parts, built once by `main.ts` and handed to every route as `ctx.app`.
 */
import type { Config } from "./config.ts";
import type { Store } from "./store.ts";
import type { Hub } from "./hub.ts";
import type { Ingest } from "./ingest.ts";
import type { LiveSessions } from "./live_sessions.ts";
import type { Spawner } from "./spawner.ts";
import type { Gitlab } from "./gitlab.ts";

export interface App {
  config: Config;
  /** SQLite: the only module that runs SQL. */
  store: Store;
  /** Batches plugin events into one transaction per tick, then publishes them. */
  ingest: Ingest;
  /** Fans frames out to browser subscribers. */
  hub: Hub;
  /** The live plugin socket of each online session. */
  live: LiveSessions;
  /** Starts agent sessions in containers. */
  spawner: Spawner;
  /** The GitLab connection (token kept in the store's settings). */
  gitlab: Gitlab;
  /** Tell browsers the session list changed (online, info, last event); throttled. */
  onSessionsChanged(): void;
}

/** The daemon's own parts, which the spawner and GitLab connection are built on. */
export type AppCore = Omit<App, "spawner" | "gitlab">;
