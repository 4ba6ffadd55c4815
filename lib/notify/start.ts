/**
 * Wire notifications into a built daemon: the watcher turns hub frames into events, the merge requests owner's
 * changes become `merge_request.*` events, and each event goes to the outbound webhooks (and web push). Kept
 * here so `lib/daemon.ts` needs one line to start and one to stop.
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
  const emit = (event: NotifyEvent) => {
    app.webhooks.emit(event);
    app.push.notify(event);
  };
  const watcher = new Watcher(app.hub, emit, { stallMs: app.config.stallMinutes * 60_000 });
  const unfollow = app.mergeRequests.onChange((change) => {
    for (const event of mergeRequestEvents(change, app.sessions.get(change.sessionId))) {
      try {
        emit(event);
      } catch (error) {
        console.error(`lvmh: notification ${event.type} not sent: ${(error as Error).message}`);
      }
    }
  });
  const unbudget = app.budgets.onReached(emit);
  watcher.prime(app.sessions.list(), app.approvals.pending());
  app.webhooks.start();
  return {
    async close() {
      unfollow();
      unbudget();
      watcher.close();
      app.push.close();
      await app.webhooks.close();
    },
  };
}
