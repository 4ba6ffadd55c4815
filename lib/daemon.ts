/**
 * Assemble the daemon from its parts: store, ingest, hub, session registry, approvals, spawner, GitLab, routes.
 * `main.ts` serves what this returns; tests can build one in-process the same way.
 */
import type { App, AppCore } from "./app.ts";
import type { Config } from "./config.ts";
import { Store } from "./store.ts";
import { Hub } from "./hub.ts";
import { Ingest } from "./ingest.ts";
import { Sessions } from "./sessions.ts";
import { Approvals } from "./approvals.ts";
import { ApprovalStore } from "./approval_store.ts";
import { Tokens } from "./tokens.ts";
import { TokenStore } from "./token_store.ts";
import { Audit } from "./audit.ts";
import { SigninThrottle } from "./signin_throttle.ts";
import { createRouter, type RouteDef } from "./router.ts";
import { CloseCode } from "./protocol.ts";
import type { Spawner } from "./spawner.ts";
import type { Gitlab } from "./gitlab.ts";
import { pruneSessions } from "./session_removal.ts";
import { Webhooks } from "./webhooks/webhooks.ts";
import { startNotify } from "./notify/start.ts";
import { Hooks } from "./hooks/hooks.ts";
import { Push } from "./notify/push.ts";
import { startIdleCollector } from "./memory.ts";
import { WalCheckpointer } from "./wal_checkpointer.ts";

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
  const checkpointer = new WalCheckpointer(store.db, config.dbPath);
  const hub = new Hub();
  // Ingest tells the registry which sessions a commit changed; the registry reads committed seqs from ingest.
  const ingest = new Ingest(store, hub, (commits) => {
    for (const c of commits) sessions.touch(c.sessionId);
  });
  const sessions = new Sessions(store, ingest, hub, {
    defaultAsk: config.localAsk,
    spawnAsk: config.spawnAsk,
  });
  const approvals = new Approvals(new ApprovalStore(store.db), {
    trySend: (id, command) => sessions.trySend(id, command),
    touch: (id) => sessions.touch(id),
    broadcast: (frame) => hub.broadcast(frame),
  });
  sessions.setWaiting((id) => approvals.waiting(id));
  const tokens = new Tokens(new TokenStore(store.db), config.token);
  const core: AppCore = {
    config,
    store,
    hub,
    ingest,
    sessions,
    approvals,
    tokens,
    audit: new Audit(store.db),
    signins: new SigninThrottle(config.signinLimit),
    webhooks: new Webhooks(store.db),
    push: new Push(store.db),
  };
  const gitlab = parts.gitlab(core);
  const app = { ...core, gitlab, spawner: parts.spawner(core, gitlab) } as App;
  app.hooks = new Hooks(app, Deno.env.get("LVMH_GITLAB_HOOK_SECRET") || null);
  const notify = startNotify(app);

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

  // Memory back after ingest bursts (lib/memory.ts): ~290 → ~100 MiB RSS after the ingest benchmark.
  const stopCollector = startIdleCollector(() => ingest.pushed);

  let stopped = false;
  return {
    app,
    handler: createRouter(app, routes),
    async shutdown() {
      if (stopped) return;
      stopped = true;
      clearInterval(pruneTimer);
      stopCollector();
      await notify.close();
      app.hooks.close();
      app.ingest.flush();
      app.tokens.close();
      await app.spawner.shutdown();
      app.sessions.closeAll(CloseCode.goingAway, "daemon shutting down");
      hub.closeAll(CloseCode.goingAway, "daemon shutting down");
      await checkpointer.close();
      store.close();
    },
  };
}
