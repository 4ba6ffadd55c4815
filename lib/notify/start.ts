/**
 * Wire notifications into a built daemon: the watcher turns hub frames into events, the merge requests owner's
 * changes become `merge_request.*` events, and each event goes to the outbound webhooks (and web push). Kept
 * here so `lib/daemon.ts` needs one line to start and one to stop.
 *
 * Several replicas on one database: every replica's hub carries every session's frames, so each would announce
 * each event; the rule is that each notification is emitted by ONE replica:
 * - what a session's plugin did (`approval.requested`, `run.settled`, `run.failed`, `session.stalled`) by the
 *   replica that holds the session (`app.replica.holds`: the plugin's socket is there); `session.lost` by the
 *   replica it was held by when its socket dropped. A session nobody holds (its replica was killed) announces
 *   nothing until its plugin is back on another replica.
 * - what only one replica knows (`spawn.failed`: the spawn job runs on the replica that took the request and
 *   its `spawn_status` frames go to that replica's hub alone; `session.crashed`: the worker's state as that
 *   replica's spawner keeps it) by the replica that produced it.
 * - `merge_request.*`: by the replica whose merge request owner saw the change. Its records are in the
 *   replica's own file (lib/merge_requests.ts), so only the replica that shipped the merge request (or took
 *   the GitLab hook about it) has the record its poller follows; a record kept in the shared database would
 *   need its poller to run on one replica.
 * - `budget.reached`: every replica counts every session's events (lib/budgets.ts runs on each, fed by ingest
 *   here and by the event feed elsewhere), and only the replicas' leader announces (lib/replica/leader.ts,
 *   `BudgetDeps.announces`), so what Budgets announces is emitted as it comes. Around a change of leader two
 *   may announce the daily cap: its `key` is the day and the cap, so the outbox keeps one delivery.
 * Where a happening has a name that is the same on every replica (an approval's id, the day's cap), the
 * event's `key` makes its webhook delivery id, so even a copy queued during a holder's takeover is stored once.
 */
import type { App } from "../app.ts";
import type { MergeRequestChange } from "../merge_request_change.ts";
import type { SessionSummary } from "../protocol.ts";
import { Watcher } from "./watcher.ts";
import type { NotifyEvent } from "./kinds.ts";

/**
 * The notifications a merge request change is worth: `merge_request.pipeline` once per finished (failed or
 * succeeded) pipeline, `merge_request.merged` when it was merged.
 */
export function mergeRequestEvents(
  change: MergeRequestChange,
  session: Pick<SessionSummary, "name" | "title"> | null,
  at = Date.now(),
): NotifyEvent[] {
  const { view } = change;
  const data = {
    sessionName: session?.name ?? session?.title ?? change.sessionId,
    repo: change.repo,
    branch: view.sourceBranch,
    iid: view.iid,
    title: view.title,
    webUrl: view.webUrl,
    path: `/sessions/${encodeURIComponent(change.sessionId)}`,
  };
  const events: NotifyEvent[] = [];
  if (change.pipelineFinished && view.pipeline) {
    events.push({
      type: "merge_request.pipeline",
      at,
      sessionId: change.sessionId,
      data: {
        ...data,
        pipelineId: view.pipeline.id,
        status: view.pipeline.status,
        pipelineUrl: view.pipeline.webUrl,
        ...(change.failedJobs ? { failedJobs: change.failedJobs } : {}),
      },
    });
  }
  if (change.merged) {
    events.push({ type: "merge_request.merged", at, sessionId: change.sessionId, data });
  }
  return events;
}

/** Start watching `app` for events and delivering them; `close()` stops both. */
export function startNotify(app: App): { close(): Promise<void> } {
  const replica = app.replica;
  const holds = (sessionId: string) => replica?.holds(sessionId) ?? true;
  const emit = (event: NotifyEvent) => {
    const failed = (error: unknown) =>
      console.error(`lvmh: notification ${event.type} not sent: ${(error as Error).message}`);
    app.webhooks.emit(event).catch(failed);
    app.push.notify(event).catch(failed);
  };
  const watcher = new Watcher(app.hub, emit, { stallMs: app.config.stallMinutes * 60_000, holds });
  const unfollow = app.mergeRequests.onChange((change) => {
    for (const event of mergeRequestEvents(change, app.sessions.get(change.sessionId))) {
      try {
        emit(event);
      } catch (error) {
        console.error(`lvmh: notification ${event.type} not sent: ${(error as Error).message}`);
      }
    }
  });
  const unbudget = app.budgets.onReached((event) =>
    emit(
      event.sessionId === null
        ? { ...event, key: `budget.reached:${String(event.data.day)}:${JSON.stringify(event.data.budget)}` }
        : event,
    )
  );
  watcher.prime(app.sessions.list(), app.approvals.pending());
  app.webhooks.start();
  // The key pair is made now, the first time in a deployment (a database away now: tried again at first use),
  // and other replicas' visibility reports are heard from now on.
  app.push.start().catch((error) => console.error(`lvmh: push: ${(error as Error).message}`));
  return {
    async close() {
      unfollow();
      unbudget();
      watcher.close();
      await app.push.close();
      await app.webhooks.close();
    },
  };
}
