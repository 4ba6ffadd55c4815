/**
 * What one new read of a merge request changes (`MergeRequestChange`, as the owner's listeners hear it), and
 * the rules that decide it: whether a finished pipeline is news (announced once per pipeline id), whether
 * the session is to be prompted about a failed one (once per pipeline id, at most `MAX_PIPELINE_PROMPTS` per
 * merge request), whether it was just merged, and whether anything a person sees changed. Pure, apart from
 * the record it reads, so that these rules (which decide what a restart or a replayed hook event may never
 * repeat) are stated once and read in one place.
 */
import type { MergeRequestView } from "./protocol.ts";
import type { Fields, Row } from "./merge_request_record.ts";

/** A session is prompted about at most this many failed pipelines per merge request. */
export const MAX_PIPELINE_PROMPTS = 3;
/** Pipeline statuses that end a pipeline and are announced. */
const FINISHED = new Set(["failed", "success"]);

/** A change of a session's merge request record, as `onChange` listeners hear of it. */
export interface MergeRequestChange {
  sessionId: string;
  repo: string;
  previous: MergeRequestView | undefined;
  view: MergeRequestView;
  /** A pipeline that failed or succeeded and was not announced before (once per pipeline id). */
  pipelineFinished: boolean;
  /** It was open and is now merged. */
  merged: boolean;
  /**
   * A failed pipeline the session is to be told of: not prompted for before, and within
   * `MAX_PIPELINE_PROMPTS` for this merge request (counted as this change is written).
   */
  promptFailure: boolean;
  /** The failed jobs, when the hook's event named them. */
  failedJobs?: string[];
}

/** The marks to write with a read, and what of it is news. */
export interface ReadMarks {
  /** The last pipeline id announced, prompted for, and the prompts so far (what the row keeps). */
  notified: number | null;
  prompted: number | null;
  prompts: number;
  /** A pipeline that failed or succeeded and was not announced before. */
  pipelineFinished: boolean;
  /** A failed pipeline the session is to be told of. */
  promptFailure: boolean;
  /** It was open and is now merged. */
  merged: boolean;
  /** Something a person sees differs from the record (`updatedAt` moves). */
  changed: boolean;
}

/** The marks after reading `mr` for the record `row` (whose view is `previous`). */
export function marksOf(row: Row, previous: MergeRequestView | undefined, mr: Fields): ReadMarks {
  // Another merge request (the old one merged or closed): its marks start over.
  const sameMr = row.iid === mr.iid;
  let notified = sameMr ? row.pipelineNotified : null;
  let prompted = sameMr ? row.pipelinePrompted : null;
  let prompts = sameMr ? row.pipelinePrompts : 0;
  const p = mr.pipeline;
  const pipelineFinished = p !== null && FINISHED.has(p.status) && notified !== p.id;
  if (pipelineFinished) notified = p.id;
  const promptFailure = p !== null && p.status === "failed" && mr.state === "opened" && prompted !== p.id &&
    prompts < MAX_PIPELINE_PROMPTS;
  if (promptFailure) {
    prompted = p.id;
    prompts++;
  }
  const merged = mr.state === "merged" && previous?.state !== "merged" && previous !== undefined;
  const changed = !previous || previous.iid !== mr.iid || previous.state !== mr.state ||
    previous.title !== mr.title || previous.mergeStatus !== mr.mergeStatus || previous.notes !== mr.notes ||
    previous.webUrl !== mr.webUrl || previous.targetBranch !== mr.targetBranch ||
    JSON.stringify(previous.pipeline) !== JSON.stringify(mr.pipeline);
  return { notified, prompted, prompts, pipelineFinished, promptFailure, merged, changed };
}
