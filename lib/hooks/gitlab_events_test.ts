import assert from "node:assert/strict";
import { parseGitlab, promptFor } from "./gitlab_events.ts";
import { failedPipeline, noteOnMergeRequest } from "../../testing/fixtures/gitlab_hooks/payloads.ts";

Deno.test("parseGitlab() reads comments, pipelines and merge request events, and ignores the rest", async (t) => {
  await t.step("a /lvmh comment on a merge request names its source branch", () => {
    const a = parseGitlab("Note Hook", noteOnMergeRequest("/lvmh  fix the tests\nplease"));
    assert.deepEqual(a, {
      kind: "note",
      repo: "group/proj",
      branch: "feature/x",
      iid: 7,
      text: "fix the tests\nplease",
      author: "alice",
      url: "http://gitlab.example/group/proj/-/merge_requests/7#note_1244",
    });
  });
  await t.step("an issue comment has no branch", () => {
    const payload = { ...noteOnMergeRequest("/lvmh look"), merge_request: undefined };
    payload.object_attributes = { ...payload.object_attributes, noteable_type: "Issue" };
    assert.equal(parseGitlab("Note Hook", payload)?.branch, null);
  });
  await t.step("a comment on a merge request without the command is news for it (text null)", () => {
    for (const note of ["LGTM", "/lvmhx do", "/lvmh   "]) {
      const a = parseGitlab("Note Hook", noteOnMergeRequest(note));
      assert.equal(a?.kind, "note");
      assert.equal(a?.kind === "note" ? a.text : "", null, note);
      assert.equal(a?.kind === "note" ? a.iid : 0, 7);
    }
  });
  await t.step("issue comments without the command, other events and bad shapes: null", () => {
    const issue = { ...noteOnMergeRequest("LGTM"), merge_request: undefined };
    issue.object_attributes = { ...issue.object_attributes, noteable_type: "Issue" };
    assert.equal(parseGitlab("Note Hook", issue), null);
    assert.equal(parseGitlab("Push Hook", noteOnMergeRequest("/lvmh do")), null);
    assert.equal(parseGitlab("Note Hook", { object_kind: "note" }), null);
    assert.equal(parseGitlab("Merge Request Hook", { object_kind: "merge_request" }), null);
  });
  await t.step("a pipeline names its id and status and only the failed jobs", () => {
    const a = parseGitlab("Pipeline Hook", failedPipeline("feature/x"))!;
    assert.deepEqual(a, {
      kind: "pipeline",
      repo: "group/proj",
      branch: "feature/x",
      id: 31,
      status: "failed",
      failedJobs: ["unit-tests"],
      url: "http://gitlab.example/group/proj/-/pipelines/31",
    });
    assert.equal(a.kind, "pipeline");
    if (a.kind === "pipeline") {
      assert.match(promptFor(a), /^The GitLab pipeline on feature\/x failed\. Failed jobs: unit-tests\./);
    }
    const mrPipeline = {
      ...failedPipeline("refs/merge-requests/7/head"),
      merge_request: { iid: 7, source_branch: "lvmh/0a1b2c3d" },
    };
    const onMr = parseGitlab("Pipeline Hook", mrPipeline);
    assert.equal(onMr?.branch, "lvmh/0a1b2c3d", "a merge request pipeline is on its source branch");
    const passed = failedPipeline("main");
    passed.object_attributes.status = "success";
    assert.equal(parseGitlab("Pipeline Hook", passed)?.kind === "pipeline", true);
  });
  await t.step("a merge request event names its iid, branch and state", () => {
    const a = parseGitlab("Merge Request Hook", {
      object_kind: "merge_request",
      project: { path_with_namespace: "group/proj" },
      object_attributes: { iid: 7, source_branch: "lvmh/0a1b2c3d", state: "merged", action: "merge" },
    });
    assert.deepEqual(a, {
      kind: "merge_request",
      repo: "group/proj",
      branch: "lvmh/0a1b2c3d",
      iid: 7,
      state: "merged",
    });
  });
});
