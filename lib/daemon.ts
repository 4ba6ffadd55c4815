/**
 * Assemble the daemon from its parts: store, ingest, hub, live sessions, spawner, GitLab, routes.
 * `main.ts` serves what this returns; tests can build one in-process the same way.
 */
import type { App, AppCore } from "./app.ts";
import type { Config } from "./config.ts";
import { Store } from "./store.ts";
import { Hub } from "./hub.ts";
import { Ingest } from "./ingest.ts";
import { LiveSessions } from "./live_sessions.ts";
import { createRouter, type RouteDef } from "./router.ts";
import { throttle } from "./throttle.ts";
import { CloseCode } from "./protocol.ts";
import type { Spawner } from "./spawner.ts";
import type { Gitlab } from "./gitlab.ts";
import { pruneSessions } from "./session_removal.ts";

/** How often, at most, browsers get a fresh session list while sessions are busy. */
const SESSION_LIST_INTERVAL_MS = 100;
/** How often sessions past the retention period are looked for (also once at start). */
const PRUNE_INTERVAL_MS = 60 * 60 * 1000;

export interface Daemon {
  app: App;
  handler: (req: Request, info: Deno.ServeHandlerInfo) => Promise<Response>;
  /** Flush pending writes, close every socket with 1001 and the database. */
  shutdown(): Promise<void>;
}

/** The parts built on the core: they get the core's store, hub and config, never the route table. */
export interface DaemonParts {
  gitlab: (core: AppCore) => Gitlab;
  spawner: (core: AppCore, gitlab: Gitlab) => Spawner;
}

/**
 * Build a daemon for `config` with the given route table.
 * @throws {Error} when the database cannot be opened.
 */
export function createDaemon(config: Config, routes: RouteDef[], parts: DaemonParts): Daemon {
  const store = new Store(config.dbPath);
  const hub = new Hub();
  const notify = throttle(
    () => hub.broadcast({ type: "session_list", sessions: store.listSessions() }),
    SESSION_LIST_INTERVAL_MS,
  );
  const core: AppCore = {
    config,
    store,
    hub,
    ingest: new Ingest(store, hub, notify),
    live: new LiveSessions((id) => store.getSession(id) !== null),
    onSessionsChanged: notify,
  };
  const gitlab = parts.gitlab(core);
  const app: App = { ...core, gitlab, spawner: parts.spawner(core, gitlab) };

  const prune = () => {
    try {
      const gone = pruneSessions(core, config.retentionDays!);
      if (gone.length) {
        console.log(
          `lvmh: deleted ${gone.length} session(s) idle for more than ${config.retentionDays} days`,
        );
      }
    } catch (error) {
      // Not fatal: the next round tries again.
      console.error(`lvmh: could not delete old sessions: ${(error as Error).message}`);
    }
  };
  let pruneTimer: ReturnType<typeof setInterval> | undefined;
  if (config.retentionDays !== null) {
    prune();
    pruneTimer = setInterval(prune, PRUNE_INTERVAL_MS);
  }

  let stopped = false;
  return {
    app,
    handler: createRouter(app, routes),
    async shutdown() {
      if (stopped) return;
      stopped = true;
      clearInterval(pruneTimer);
      notify.cancel();
      app.ingest.flush();
      await app.spawner.shutdown();
      app.live.closeAll(CloseCode.goingAway, "daemon shutting down");
      hub.closeAll(CloseCode.goingAway, "daemon shutting down");
      store.close();
    },
  };
}
