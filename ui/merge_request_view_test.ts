import assert from "node:assert/strict";
import { ApiError } from "./api.ts";
import {
  commentPlace,
  defaultMergeRequestTitle,
  hunkLines,
  mergeRequestBadge,
  mergeStatusWords,
  pipelineTone,
  pipelineWords,
  shipBody,
  shipFailure,
} from "./merge_request_view.ts";

Deno.test("mergeRequestBadge() says the iid, then the state or the pipeline in words", () => {
  assert.deepEqual(mergeRequestBadge({ iid: 12, state: "opened", pipeline: "failed" }), {
    text: "!12 · pipeline failed",
    tone: "bad",
  });
  assert.deepEqual(mergeRequestBadge({ iid: 3, state: "opened", pipeline: "success" }), {
    text: "!3 · pipeline passed",
    tone: "good",
  });
  assert.deepEqual(mergeRequestBadge({ iid: 4, state: "opened", pipeline: "running" }), {
    text: "!4 · pipeline running",
    tone: "busy",
  });
  assert.deepEqual(mergeRequestBadge({ iid: 1, state: "opened", pipeline: null }), {
    text: "!1",
    tone: "quiet",
  });
  // Merged or closed matters more than the last pipeline.
  assert.equal(mergeRequestBadge({ iid: 5, state: "merged", pipeline: "failed" }).text, "!5 · merged");
  assert.equal(mergeRequestBadge({ iid: 6, state: "closed", pipeline: "success" }).text, "!6 · closed");
});

Deno.test("pipelineWords() and mergeStatusWords() keep an unknown GitLab word readable", () => {
  assert.equal(pipelineWords("waiting_for_resource"), "waiting for a runner");
  assert.equal(pipelineWords("some_new_status"), "some new status");
  assert.equal(pipelineTone(null), "quiet");
  assert.equal(pipelineTone("pending"), "busy");
  assert.equal(mergeStatusWords("mergeable"), "ready to merge");
  assert.equal(mergeStatusWords("ci_still_running"), "pipeline still running");
  assert.equal(mergeStatusWords("brand_new"), "brand new");
  assert.equal(mergeStatusWords(null), null);
});

Deno.test("shipFailure() maps the route's statuses to what the panel shows", () => {
  assert.equal(shipFailure(new ApiError(409, "Nothing to push")).kind, "nothing");
  assert.equal(shipFailure(new ApiError(412, "GitLab is not connected")).kind, "not-connected");
  assert.deepEqual(
    shipFailure(
      new ApiError(422, "Refusing to push", {
        error: "Refusing to push",
        secrets: [{ file: "config.env", line: 2, kind: "GitLab token" }, { file: 3 }, null],
      }),
    ),
    {
      kind: "secrets",
      message: "Refusing to push",
      secrets: [{ file: "config.env", line: 2, kind: "GitLab token" }],
    },
  );
  assert.deepEqual(shipFailure(new ApiError(422, "x")), { kind: "secrets", message: "x", secrets: [] });
  assert.deepEqual(shipFailure(new ApiError(502, "403 Forbidden: insufficient_scope")), {
    kind: "gitlab",
    message: "403 Forbidden: insufficient_scope",
  });
  assert.deepEqual(shipFailure(new TypeError("Failed to fetch")), {
    kind: "other",
    message: "Failed to fetch",
  });
});

Deno.test("commentPlace() names path:line for inline comments only", () => {
  assert.equal(commentPlace({ path: "src/a.ts", line: 12 }), "src/a.ts:12");
  assert.equal(commentPlace({ path: "src/a.ts" }), "src/a.ts");
  assert.equal(commentPlace({}), null);
});

Deno.test("defaultMergeRequestTitle() and shipBody() build the call from the form", () => {
  assert.equal(defaultMergeRequestTitle("\n  Fix the parser  \nmore"), "Fix the parser");
  assert.equal(defaultMergeRequestTitle("x".repeat(300)).length, 255);
  assert.deepEqual(shipBody({ title: " T ", description: " ", targetBranch: "", draft: false }), {
    title: "T",
  });
  assert.deepEqual(shipBody({ title: "T", description: "why", targetBranch: " dev ", draft: true }), {
    title: "T",
    description: "why",
    targetBranch: "dev",
    draft: true,
  });
});

Deno.test("hunkLines() numbers a hunk with its header, and reads one without", () => {
  assert.deepEqual(hunkLines("@@ -1,2 +1,2 @@\n a\n-b\n+c\n"), [
    { kind: "hunk", text: "@@ -1,2 +1,2 @@" },
    { kind: "ctx", text: "a", old: 1, new: 1 },
    { kind: "del", text: "b", old: 2 },
    { kind: "add", text: "c", new: 2 },
  ]);
  assert.deepEqual(hunkLines(" a\n+c"), [{ kind: "ctx", text: "a" }, { kind: "add", text: "c" }]);
});
