/**
 * The composition root: builds every stateful part of the daemon (`App` lists them), wires them together, and
 * shuts them down in order. `main.ts` serves what this returns; tests build one in-process the same way.
 */
import type { App } from "./app.ts";
import type { Config } from "./config.ts";
import type { SharedDatabase } from "./storage/open.ts";
import { Store } from "./store.ts";
import { Hub } from "./hub.ts";
import { Ingest } from "./ingest.ts";
import { Sessions } from "./sessions.ts";
import { Approvals } from "./approvals.ts";
import { ApprovalStore } from "./approval_store.ts";
import { SqliteApprovalLog } from "./storage/sqlite_approval_log.ts";
import { PgApprovalLog } from "./storage/pg_approval_log.ts";
import { ImageStore } from "./image_store.ts";
import { SqliteImageLog } from "./storage/sqlite_image_log.ts";
import { PgImageLog } from "./storage/pg_image_log.ts";
import { Tokens } from "./tokens.ts";
import { SqliteTokenLog } from "./storage/sqlite_token_log.ts";
import { PgTokenLog } from "./storage/pg_token_log.ts";
import { Audit } from "./audit.ts";
import { SqliteAuditLog } from "./storage/sqlite_audit_log.ts";
import { PgAuditLog } from "./storage/pg_audit_log.ts";
import { Settings } from "./settings.ts";
import { PgSettingsLog } from "./storage/pg_settings_log.ts";
import { SigninThrottle } from "./signin_throttle.ts";
import { createRouter, type RouteDef } from "./router.ts";
import { CloseCode } from "./protocol.ts";
import { createSpawner } from "./spawner.ts";
import { createDockerBackend } from "./spawn/docker_backend.ts";
import { createKubeBackend } from "./spawn/kube_backend.ts";
import { ContainerStates } from "./spawn/containers.ts";
import { SharedWorkerStates } from "./spawn/shared_worker_states.ts";
import { SharedSpawnJobs } from "./spawn/shared_jobs.ts";
import { startIdleStop } from "./spawn/idle.ts";
import { agentToken } from "./auth.ts";
import { createGitlab } from "./gitlab.ts";
import { createGitlabMergeRequests } from "./gitlab_merge_requests.ts";
import { MergeRequests, POLL_MS } from "./merge_requests.ts";
import { SharedMergeRequests } from "./merge_requests_shared.ts";
import { PgMergeRequestLog } from "./storage/pg_merge_request_log.ts";
import { helperShipWork } from "./ship_work.ts";
import { startPruning } from "./session_removal.ts";
import { Webhooks } from "./webhooks/webhooks.ts";
import { startNotify } from "./notify/start.ts";
import { Hooks } from "./hooks/hooks.ts";
import { Push } from "./notify/push.ts";
import { SqliteWebhookLog } from "./storage/sqlite_webhook_log.ts";
import { PgWebhookLog } from "./storage/pg_webhook_log.ts";
import { SqlitePushLog } from "./storage/sqlite_push_log.ts";
import { PgPushLog } from "./storage/pg_push_log.ts";
import { PgVisibilityShare } from "./notify/visibility.ts";
import { DaemonFeed } from "./daemon_feed.ts";
import { startIdleCollector } from "./memory.ts";
import { WalCheckpointer } from "./wal_checkpointer.ts";
import { Workspaces } from "./workspaces.ts";
import { SharedWorkspaces } from "./workspaces_shared.ts";
import { SessionChanges } from "./changes/session_changes.ts";
import { startIndexer } from "./search/indexer.ts";
import { Budgets } from "./budgets.ts";
import { SharedBudgetRows } from "./budget_shared.ts";
import { PgSessionStateLog } from "./storage/pg_session_state_log.ts";
import { Presence } from "./presence.ts";
import { Liveness } from "./liveness.ts";
import { UsageRuns } from "./usage_runs.ts";
import { Replica } from "./replica/replica.ts";
import { Mirror } from "./replica/mirror.ts";
import { ALWAYS_LEADER, Leadership, type Leading } from "./replica/leader.ts";
import type { SessionCommit } from "./store.ts";

/** Another replica's live delta as the hub publishes it (its seq read from its JSON). */
function liveEvent({ json }: { json: string }): { seq: number; json: string } {
  return { seq: (JSON.parse(json) as { seq: number }).seq, json };
}

export interface Daemon {
  app: App;
  handler: (req: Request, info: Deno.ServeHandlerInfo) => Promise<Response>;
  /** Resolves once the daemon may serve (with a shared database: its replica started, its copy following). */
  ready: Promise<void>;
  /** Flush pending writes, close every socket with 1001 and the database. */
  shutdown(): Promise<void>;
}

export interface DaemonOptions {
  /** The PostgreSQL database several replicas share (`LVMH_DATABASE_URL`); absent: the SQLite file alone. */
  database?: SharedDatabase | null;
}

/**
 * Build a daemon for `config` with the given route table.
 * @throws {Error} when the database cannot be opened.
 */
export function createDaemon(
  config: Config,
  routes: RouteDef[],
  options: DaemonOptions = {},
): Daemon {
  const store = new Store(config.dbPath);
  const checkpointer = new WalCheckpointer(store.db, config.dbPath);
  // The daemon's store always keeps the index; events stored before it existed are indexed in the background.
  const search = store.search!;
  const stopIndexer = startIndexer(search, store.gate, () => store.lastAppendAt);
  const hub = new Hub();
  // With a shared database, PostgreSQL is the truth and this file the replica's copy of it (lib/replica/).
  const replica = options.database ? new Replica(options.database, config.replicaId) : null;
  // Once-only background jobs (docs/REPLICAS.md) run on the leader: with replicas, the one holding its lock.
  const leader = replica && new Leadership(replica.db.listen, { log: (line) => console.warn(line) });
  const leading: Leading = leader ?? ALWAYS_LEADER;
  // Ingest tells the registry which sessions a commit changed; the registry reads committed seqs from ingest.
  const committed = (commits: SessionCommit[]) => {
    for (const c of commits) sessions.touch(c.sessionId);
    for (const c of commits) budgets.committed(c.sessionId);
    usage.committed(commits);
  };
  const ingest = new Ingest(
    store,
    hub,
    committed,
    replica && {
      append: (sessionId, events) => replica.append(sessionId, events),
      copied: (sessionId, lastSeq) => replica.copied(sessionId, lastSeq),
      notCopied: (sessionId) => replica.notCopied(sessionId),
      live: (sessionId, after, events) => replica.publishLive(sessionId, after, events),
    },
  );
  // Every session's events other replicas store reach this file, and this replica's browsers, through it.
  const mirror = replica &&
    new Mirror(store, replica.log, replica.feed, {
      committed: (commits) => {
        for (const c of commits) {
          // Another replica's deltas that came before these events are published among them, by seq.
          const deltas = replica.deltasWithin(c.sessionId, c.after, c.lastSeq).map(liveEvent);
          const events = deltas.length
            ? [...c.inserted, ...deltas].sort((x, y) => x.seq - y.seq)
            : c.inserted;
          hub.publishEvents(c.sessionId, c.after, events);
          replica.advanced(c.sessionId);
        }
        committed(commits);
      },
      created: (info) => sessions.createdElsewhere(info),
      // What this replica derived from the copy (usage runs) goes with the session, as a local delete takes it.
      deleted: (sessionId) => {
        if (sessions.removedElsewhere(sessionId)) usage.sessionDeleted(sessionId);
      },
      info: (sessionId) => replica.info(sessionId),
    });
  // Prompt images: alone, `prompt` keeps them in its own synchronous step (the same table `images` reads);
  // with replicas, on the shared database, kept by the prompt route before `prompt` (`keepShared`).
  const images = replica ? new PgImageLog(replica.db.sql) : new SqliteImageLog(store.db);
  const sessions = new Sessions(store, ingest, hub, {
    defaultAsk: config.localAsk,
    spawnAsk: config.spawnAsk,
    images: replica ? undefined : new ImageStore(store.db),
    ...(replica && mirror
      ? {
        shared: {
          claim: (info, notAfter) => replica.claim(info, notAfter),
          catchUp: (sessionId) => mirror.catchUp(sessionId),
          release: (sessionId, epoch) => replica.release(sessionId, epoch),
          send: (frame, options) => replica.send(frame, options),
          take: (sessionId) => replica.take(sessionId),
          heldElsewhere: (sessionId) => replica.heldElsewhere(sessionId),
          setAsk: (sessionId, ask) => replica.setAsk(sessionId, ask),
          register: (info, ask) => replica.register(info, ask),
          deleteSession: (sessionId) => replica.deleteSession(sessionId),
        },
      }
      : {}),
  });
  // Budgets count from the committed log and reach plugins with a `policy` frame (their ask set unchanged).
  const budgets = new Budgets(store.db, config, {
    session: (id) => store.getSession(id),
    send: (id, budget) => {
      sessions.touch(id); // the row shows the budget
      return sessions.trySend(id, { type: "policy", ask: sessions.askOf(id), budget });
    },
    online: () => sessions.list().filter((s) => s.online).map((s) => s.id),
    holds: (id) => replica?.holds(id) ?? true,
    announces: () => leading.isLeader(),
    sessions: () => store.listSessions(),
  }, replica && new SharedBudgetRows(new PgSessionStateLog(replica.db.sql))); // with replicas, limits shared
  // One row per run for usage reports, kept from the committed log; what a crash or an upgrade left unread
  // is read in the background.
  const usage = new UsageRuns(store.db);
  usage.backfill(() => store.listSessions());
  // Approvals are the deployment's: with replicas, one answer wins across all of them.
  const approvalLog = replica
    ? new PgApprovalLog(replica.db.sql, replica.db.listen)
    : new SqliteApprovalLog(store.db);
  const approvals = new Approvals(approvalLog, {
    trySend: (id, command) => sessions.trySend(id, command),
    touch: (id) => sessions.touch(id),
    broadcast: (frame) => hub.broadcast(frame),
    raiseBudget: (id, handle) => budgets.raise(id, handle),
    budgetApproved: (id) => budgets.raised(id),
  }, replica ? {} : { pending: new ApprovalStore(store.db).pending() }); // read now: nothing sees an empty list
  // With replicas the pending list is read from the shared log before the daemon serves (`ready`).
  if (!replica) void approvals.start();
  sessions.setWaiting((id) => approvals.waiting(id));
  sessions.setBudgets((id) => budgets.glance(id));
  // Settings (the GitLab connection, the hook secret) are the deployment's: shared by replicas.
  const settings = replica
    ? new Settings(new PgSettingsLog(replica.db.sql, replica.db.listen))
    : Settings.sqlite(store);
  const gitlab = createGitlab({ config, settings });
  // Working copies and merge requests are the deployment's: with replicas, on the shared database.
  const workspaces = replica
    ? new SharedWorkspaces(new PgSessionStateLog(replica.db.sql))
    : new Workspaces(store.db);
  const shipDeps = {
    workspaces,
    gitlab,
    api: createGitlabMergeRequests(gitlab),
    // The spawn backend's helpers (containers, or Pods on the session's claim); it is made just below.
    work: helperShipWork(() => backend.helpers),
  };
  const sharedMrs = replica && new SharedMergeRequests(new PgMergeRequestLog(replica.db.sql), shipDeps);
  const mergeRequests = sharedMrs ?? new MergeRequests(store.db, shipDeps);
  // A record's change is the session row's: the list shows `!12 · pipeline failed`.
  sessions.setMergeRequests((id) => mergeRequests.summary(id));
  mergeRequests.onChange((change) => sessions.touch(change.sessionId));
  mergeRequests.follow(POLL_MS, () => leading.isLeader()); // GitLab is asked by one replica
  // Workers on the Docker engine; jobs go to browsers as `spawn_status`, spawned sessions into the registry.
  // Kubernetes workers clone for themselves; the clone's base is recorded here as the Docker pipeline does.
  const backend = config.kube
    ? createKubeBackend({ ...config, kube: config.kube }, {
      credential: () => gitlab.credential(),
      onCloned: (sessionId, repo, base) =>
        void Promise.resolve(workspaces.record(sessionId, { ...base, repo })).catch((error) =>
          console.error(`lvmh: working copy of ${sessionId} not recorded: ${(error as Error).message}`)
        ),
      // With replicas the shared rows say: this copy may not have every session yet.
      sessionKnown: (sessionId) =>
        sessions.get(sessionId) !== null || (replica?.info(sessionId).then((info) => info !== null) ?? false),
      shared: replica !== null,
      sweepStorage: () => leading.isLeader(),
    })
    : createDockerBackend(config);
  const spawner = createSpawner({
    config,
    backend,
    publishJobs: (jobs) => hub.broadcast({ type: "spawn_status", jobs }),
    // With replicas every replica's jobs are listed (lib/spawn/shared_jobs.ts); the leader prunes their table.
    jobs: replica ? SharedSpawnJobs.forReplica(replica.db.sql, config.replicaId, hub, leading) : undefined,
    registerSession: (info, ask) => sessions.register(info, ask),
    repos: gitlab,
    agentToken: (sessionId) => agentToken(config.token, sessionId),
    workspaces,
    // Kept in the database: a stopped or crashed session stays resumable across restarts. With replicas, in
    // the rows they share: any replica lists, stops and resumes any worker; the leader watches them all.
    containers: replica
      ? SharedWorkerStates.started(new PgSessionStateLog(replica.db.sql), (id) => {
        if (sessions.get(id)) sessions.touch(id); // not one removed meanwhile: its removal would be lost
      })
      : new ContainerStates(store.db, (id) => sessions.touch(id)),
    leads: () => leading.isLeader(),
  });
  sessions.setContainers((id) => spawner.container(id) ?? null);
  const idleStop = startIdleStop({ minutes: config.idleStopMinutes, spawner, sessions });
  const parts = {
    config,
    replica,
    store,
    search,
    hub,
    liveness: new Liveness(),
    ingest,
    sessions,
    approvals,
    images,
    tokens: new Tokens(
      replica ? new PgTokenLog(replica.db.sql, replica.db.listen) : new SqliteTokenLog(store.db),
      config.token,
    ),
    audit: new Audit(replica ? new PgAuditLog(replica.db.sql) : new SqliteAuditLog(store.db)),
    settings,
    signins: new SigninThrottle(config.signinLimit),
    webhooks: new Webhooks(
      replica
        ? new PgWebhookLog(replica.db.sql, { leaseMs: config.webhookLeaseSeconds * 1000 })
        : new SqliteWebhookLog(store.db, { leaseMs: config.webhookLeaseSeconds * 1000 }),
      { replica: config.replicaId },
    ),
    push: replica
      ? new Push(new PgPushLog(replica.db.sql), { visibility: new PgVisibilityShare(replica.db) })
      : new Push(new SqlitePushLog(store.db)),
    gitlab,
    mergeRequests,
    spawner,
    workspaces,
    changes: new SessionChanges({ sessions, workspaces, config, backend }),
  };
  const hooks = new Hooks(parts, config.gitlabHookSecret);
  const feed = new DaemonFeed(parts);
  // The same object, not a copy: hooks and the feed read their parts at each use, so a part a test swaps on
  // `app` (a recording spawner) is the one they use.
  const presence = new Presence((frame) => hub.broadcast(frame));
  const app: App = Object.assign(parts, { hooks, feed, budgets, presence, usage });
  budgets.onReached((event) =>
    app.audit.append({
      actor: "lvmh",
      role: null,
      action: "budget",
      sessionId: event.sessionId,
      detail: event.data,
    })
  );
  const notify = startNotify(app);

  const pruning = startPruning(app, config.retentionDays, () => leading.isLeader());
  // A replica that becomes the leader (its copy caught up) prunes and sweeps what the last leader left.
  leading.onChange((now) => {
    console.log(`lvmh: replica ${config.replicaId} ${now ? "leads" : "no longer leads"} the once-only jobs`);
    if (!now) return;
    pruning.prune();
    backend.sweep().catch((error) => console.warn(`lvmh: could not sweep: ${(error as Error).message}`));
  });

  // Memory back after ingest bursts (lib/memory.ts): ~290 → ~100 MiB RSS after the ingest benchmark.
  const stopCollector = startIdleCollector(() => ingest.pushed);

  const ready = replica && mirror
    ? (async () => {
      await settings.start();
      await approvals.start();
      await budgets.start();
      await sharedMrs?.start((ids) => ids.forEach((id) => sessions.touch(id)));
      await replica.start({
        deliver: (frame) => sessions.deliver(frame),
        fenced: (sessionId) => sessions.fenced(sessionId),
        heldElsewhereChanged: (ids) => ids.forEach((id) => sessions.touch(id)),
        releaseLive: (sessionId, json, after) => hub.publishEvents(sessionId, after, [liveEvent({ json })]),
        cursor: (sessionId) => store.getSession(sessionId) ? store.lastSeq(sessionId) : -1,
      });
      await mirror.start();
      await leader?.start();
      hooks.start(); // kept hook prompts: taken on once the copy follows the shared log
    })()
    : Promise.resolve();

  let stopped = false;
  return {
    app,
    ready,
    handler: createRouter(app, routes),
    async shutdown() {
      if (stopped) return;
      stopped = true;
      pruning.close();
      budgets.close();
      presence.close();
      app.liveness.close();
      idleStop.close();
      stopCollector();
      await notify.close();
      await app.mergeRequests.close();
      await hooks.close();
      feed.close();
      mirror?.close();
      app.ingest.flush();
      await app.ingest.drained();
      usage.close(); // after the last commit's count
      await app.tokens.close();
      await backend.close?.(); // first: the spawner's start may still wait on an engine that does not answer
      await app.spawner.shutdown();
      app.sessions.closeAll(CloseCode.goingAway, "daemon shutting down");
      hub.closeAll(CloseCode.goingAway, "daemon shutting down");
      await approvals.close();
      await approvalLog.close();
      stopIndexer();
      await checkpointer.close();
      await app.audit.close();
      await settings.close();
      await leading.close();
      await replica?.close();
      store.close();
    },
  };
}
