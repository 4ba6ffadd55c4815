import assert from "node:assert/strict";
import { mergeRequestEvents } from "./start.ts";
import { describe, NOTIFY_KINDS } from "./kinds.ts";
import type { MergeRequestChange } from "../merge_request_change.ts";
import type { MergeRequestView } from "../protocol.ts";

const view: MergeRequestView = {
  iid: 12,
  webUrl: "http://gitlab.example/g/p/-/merge_requests/12",
  state: "opened",
  sourceBranch: "lvmh/0a1b2c3d",
  targetBranch: "main",
  sha: "b".repeat(40),
  title: "Fix the parser",
  pipeline: { id: 7, status: "failed", webUrl: "http://gitlab.example/g/p/-/pipelines/7" },
  mergeStatus: "mergeable",
  notes: 0,
  updatedAt: 1,
};
const change = (over: Partial<MergeRequestChange>): MergeRequestChange => ({
  sessionId: "s1",
  repo: "g/p",
  previous: view,
  view,
  pipelineFinished: false,
  merged: false,
  promptFailure: false,
  ...over,
});

Deno.test("mergeRequestEvents(): a finished pipeline and a merge, each its own kind; nothing else", () => {
  assert.ok(NOTIFY_KINDS.includes("merge_request.pipeline") && NOTIFY_KINDS.includes("merge_request.merged"));
  assert.deepEqual(mergeRequestEvents(change({}), null), []);
  const [pipeline] = mergeRequestEvents(
    change({ pipelineFinished: true, failedJobs: ["unit"] }),
    { name: "parser work", title: "x" },
    5,
  );
  assert.deepEqual(pipeline, {
    type: "merge_request.pipeline",
    at: 5,
    sessionId: "s1",
    data: {
      sessionName: "parser work",
      repo: "g/p",
      branch: "lvmh/0a1b2c3d",
      iid: 12,
      title: "Fix the parser",
      webUrl: view.webUrl,
      path: "/sessions/s1",
      pipelineId: 7,
      status: "failed",
      pipelineUrl: view.pipeline!.webUrl,
      failedJobs: ["unit"],
    },
  });
  assert.deepEqual(describe(pipeline), { title: "parser work: pipeline failed", body: "!12 Fix the parser" });
  const merged = mergeRequestEvents(change({ merged: true, view: { ...view, state: "merged" } }), null);
  assert.deepEqual(merged.map((e) => e.type), ["merge_request.merged"]);
  assert.equal(merged[0].data.sessionName, "s1");
  assert.deepEqual(describe(merged[0]), { title: "s1: merged", body: "!12 Fix the parser" });
});
