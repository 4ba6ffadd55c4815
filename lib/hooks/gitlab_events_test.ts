import assert from "node:assert/strict";
import { parseGitlab, promptFor } from "./gitlab_events.ts";
import { failedPipeline, noteOnMergeRequest } from "../../testing/fixtures/gitlab_hooks/payloads.ts";

Deno.test("parseGitlab() reads /lvmh comments and failed pipelines, and ignores the rest", async (t) => {
  await t.step("a /lvmh comment on a merge request names its source branch", () => {
    const a = parseGitlab("Note Hook", noteOnMergeRequest("/lvmh  fix the tests\nplease"));
    assert.deepEqual(a, {
      kind: "note",
      repo: "group/proj",
      branch: "feature/x",
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
  await t.step("comments without the command, other events, bad shapes and passing pipelines: null", () => {
    assert.equal(parseGitlab("Note Hook", noteOnMergeRequest("LGTM")), null);
    assert.equal(parseGitlab("Note Hook", noteOnMergeRequest("/lvmhx do")), null);
    assert.equal(parseGitlab("Note Hook", noteOnMergeRequest("/lvmh   ")), null);
    assert.equal(parseGitlab("Push Hook", noteOnMergeRequest("/lvmh do")), null);
    assert.equal(parseGitlab("Note Hook", { object_kind: "note" }), null);
    const passed = failedPipeline("main");
    passed.object_attributes.status = "success";
    assert.equal(parseGitlab("Pipeline Hook", passed), null);
  });
  await t.step("a failed pipeline lists only the failed jobs", () => {
    const a = parseGitlab("Pipeline Hook", failedPipeline("feature/x"))!;
    assert.deepEqual(a, {
      kind: "pipeline",
      repo: "group/proj",
      branch: "feature/x",
      failedJobs: ["unit-tests"],
      url: "http://gitlab.example/group/proj/-/pipelines/31",
    });
    assert.match(promptFor(a), /^The GitLab pipeline on feature\/x failed\. Failed jobs: unit-tests\./);
  });
});
