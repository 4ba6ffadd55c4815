/**
 * One new read of a merge request applied to its record, as data: what to write (`Save`, for
 * `MergeRequestLog.saveIf`), the row it leaves, and the change the listeners hear of (or null when nothing
 * they care about moved). Pure, so that a replica whose compare-and-set lost (another replica wrote the
 * record meanwhile) computes it again from the row that won, and the marks (announced and prompted once per
 * pipeline) are decided from the row actually replaced.
 */
import { marksOf, type MergeRequestChange } from "./merge_request_change.ts";
import { type Fields, type Row, toView } from "./merge_request_record.ts";
import type { Save } from "./storage/merge_request_log.ts";

/** A read applied to a record. */
export interface Read {
  save: Save;
  /** The record once `save` is written. */
  row: Row;
  change: MergeRequestChange | null;
}

/** What reading `mr` at `now` does to `row` (`failedJobs`: what a hook's pipeline event named). */
export function readOf(row: Row, mr: Fields, now: number, extra: { failedJobs?: string[] } = {}): Read {
  const previous = toView(row) ?? undefined;
  const m = marksOf(row, previous, mr);
  const save: Save = {
    fields: mr,
    updatedAt: m.changed ? now : row.updatedAt,
    refreshedAt: now,
    marks: { notified: m.notified, prompted: m.prompted, prompts: m.prompts },
  };
  const after: Row = {
    ...row,
    iid: mr.iid,
    webUrl: mr.webUrl,
    state: mr.state,
    targetBranch: mr.targetBranch,
    title: mr.title,
    pipeline: mr.pipeline ? JSON.stringify(mr.pipeline) : null,
    mergeStatus: mr.mergeStatus,
    notes: mr.notes,
    updatedAt: save.updatedAt,
    refreshedAt: now,
    pipelineNotified: m.notified,
    pipelinePrompted: m.prompted,
    pipelinePrompts: m.prompts,
  };
  const change = m.changed || m.pipelineFinished || m.promptFailure
    ? {
      sessionId: row.sessionId,
      repo: row.repo,
      previous,
      view: toView(after)!,
      pipelineFinished: m.pipelineFinished,
      merged: m.merged,
      promptFailure: m.promptFailure,
      ...(extra.failedJobs?.length ? { failedJobs: extra.failedJobs } : {}),
    }
    : null;
  return { save, row: after, change };
}
