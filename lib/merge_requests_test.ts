import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { createGitlabMergeRequests } from "./gitlab_merge_requests.ts";
import { MergeRequests } from "./merge_requests.ts";
import { NotConnectedError } from "./merge_request_errors.ts";
import { SecretsFoundError, type ShipWork } from "./ship_work.ts";
import { UpstreamError } from "./errors.ts";
import { Workspaces } from "./workspaces.ts";
import { startGitlabFixture } from "../testing/fixtures/gitlab_fixture.ts";

const TOKEN = "fixture-token";
const PROJECT = "group/app";
const BASE = "a".repeat(40);
const SESSION = "0123abcd-0000-4000-8000-000000000000";
const BRANCH = "lvmh/0123abcd";

/** The git steps as data: what the working copy holds, and every push lvmh asked for. */
function fakeWork() {
  const state: { head: string; dirty: boolean; patch: string; commitPatch: string; remote?: string | null } =
    {
      head: BASE,
      dirty: false,
      patch: "",
      commitPatch: "",
    };
  const pushes: { head: string; lease: string | null; branch: string; url: string; token: string }[] = [];
  let n = 0;
  const work: ShipWork = {
    inspect: () =>
      Promise.resolve({ head: state.head, dirty: state.dirty, containsBase: true, patch: state.patch }),
    commit: () => {
      if (!state.dirty) return Promise.resolve({ head: state.head, committed: false, patch: "" });
      state.head = String(++n).repeat(40).slice(0, 40);
      state.dirty = false;
      return Promise.resolve({ head: state.head, committed: true, patch: state.commitPatch });
    },
    bundle: () => Promise.resolve({ head: state.head, bundle: new Uint8Array([1]) }),
    push: (o) => {
      if (state.remote !== undefined && o.lease !== state.remote) {
        return Promise.reject(new Error(`! [rejected] ${o.branch} (stale info)`));
      }
      pushes.push({ head: o.head, lease: o.lease, branch: o.branch, url: o.url, token: o.token });
      state.remote = o.head;
      return Promise.resolve();
    },
  };
  return { state, pushes, work };
}

const added = (file: string, line: string) =>
  `diff --git a/${file} b/${file}\n--- a/${file}\n+++ b/${file}\n@@ -0,0 +1 @@\n+${line}\n`;

Deno.test("MergeRequests.ship: create, push under the lease, update; adopt GitLab's open one", async (t) => {
  const gl = startGitlabFixture({
    token: TOKEN,
    projects: [{ path: PROJECT, lastActivityAt: "2026-01-01" }],
  });
  let connected: string | null = null;
  const gitlab = {
    credential: () => connected,
    status: () => ({ connected: connected !== null, baseUrl: gl.url }),
    cloneUrl: (repo: string) => `${gl.url}/${repo}.git`,
  };
  const db = new DatabaseSync(":memory:");
  const workspaces = new Workspaces(db);
  const { state, pushes, work } = fakeWork();
  let now = 1_000_000;
  const mrs = new MergeRequests(db, {
    workspaces,
    gitlab,
    api: createGitlabMergeRequests(gitlab),
    work,
    now: () => now,
  });
  try {
    await t.step("not spawned → 409; not connected → NotConnectedError; nothing to push → 409", async () => {
      await assert.rejects(mrs.ship(SESSION, { title: "t" }), /not a spawned session/);
      workspaces.record(SESSION, { repo: PROJECT, baseBranch: "main", baseSha: BASE, branch: BRANCH });
      await assert.rejects(mrs.ship(SESSION, { title: "t" }), NotConnectedError);
      connected = TOKEN;
      await assert.rejects(mrs.ship(SESSION, { title: "t" }), /Nothing to push/);
      assert.equal(mrs.get(SESSION), undefined);
    });

    await t.step("a secret in the uncommitted work: refused before any commit or push", async () => {
      state.dirty = true;
      state.patch = added("x.pem", "-----BEGIN " + "RSA PRIVATE KEY-----");
      const error = await mrs.ship(SESSION, { title: "t" }).catch((e) => e);
      assert.ok(error instanceof SecretsFoundError);
      assert.deepEqual(error.findings, [{ file: "x.pem", line: 1, kind: "private key" }]);
      assert.equal(state.dirty, true);
      assert.deepEqual(pushes, []);
    });

    let first = "";
    await t.step("first ship: commit, push with an empty lease, create as a draft → created", async () => {
      state.patch = added("a.txt", "hello");
      const out = await mrs.ship(SESSION, { title: "Add a", draft: true, description: "d" });
      first = state.head;
      assert.equal(out.created, true);
      assert.deepEqual(out.mergeRequest, {
        iid: 1,
        webUrl: `${gl.url}/${PROJECT}/-/merge_requests/1`,
        state: "opened",
        sourceBranch: BRANCH,
        targetBranch: "main",
        sha: first,
      });
      assert.deepEqual(pushes, [{
        head: first,
        lease: null,
        branch: BRANCH,
        url: `${gl.url}/${PROJECT}.git`,
        token: TOKEN,
      }]);
      assert.equal(gl.mergeRequests[0].title, "Draft: Add a");
    });

    await t.step("second ship: the lease is what lvmh pushed; the same MR is updated", async () => {
      state.dirty = true;
      const out = await mrs.ship(SESSION, { title: "Add a and b", targetBranch: "ignored-on-update" });
      assert.equal(out.created, false);
      assert.equal(out.mergeRequest.iid, 1);
      assert.equal(pushes.at(-1)!.lease, first);
      assert.equal(gl.mergeRequests.length, 1);
      assert.equal(gl.mergeRequests[0].title, "Add a and b");
      assert.equal(gl.mergeRequests[0].draft, false);
    });

    await t.step(
      "a secret committed between inspection and commit: refused after the commit, not pushed",
      async () => {
        state.dirty = true;
        state.patch = added("a.txt", "fine");
        state.commitPatch = added("late.txt", "AKIA" + "IOSFODNN7EXAMPLE");
        const count = pushes.length;
        const error = await mrs.ship(SESSION, { title: "t" }).catch((e) => e);
        assert.ok(error instanceof SecretsFoundError);
        assert.match(error.message, /late\.txt:1.*committed in the working copy, not pushed/);
        assert.equal(pushes.length, count);
        // An admin's allowSecrets pushes it.
        state.patch = state.commitPatch;
        const out = await mrs.ship(SESSION, { title: "t", allowSecrets: true });
        assert.equal(pushes.length, count + 1);
        assert.equal(out.mergeRequest.sha, state.head);
      },
    );

    await t.step(
      "a session whose record was lost adopts the open merge request GitLab names on its 409",
      async () => {
        mrs.sessionDeleted(SESSION);
        assert.equal(mrs.get(SESSION), undefined);
        state.dirty = true;
        state.patch = added("c.txt", "c");
        state.commitPatch = state.patch;
        // lvmh lost its lease too: GitLab's branch exists, so the push would fail on a real remote ("stale info",
        // a 502); the fake accepts it here, to reach the merge request.
        state.remote = undefined;
        const out = await mrs.ship(SESSION, { title: "Adopted" });
        assert.equal(out.created, true);
        assert.equal(out.mergeRequest.iid, 1);
        assert.equal(gl.mergeRequests.length, 1);
        assert.equal(gl.mergeRequests[0].title, "Adopted");
        assert.equal((await mrs.view(SESSION))?.iid, 1);
      },
    );

    await t.step("GET's view is read again from GitLab once it is 30 s old, and not before", async () => {
      gl.mergeRequests[0].state = "merged";
      now += 29_000;
      assert.equal((await mrs.view(SESSION))?.state, "opened");
      now += 1_000;
      const view = await mrs.view(SESSION);
      assert.equal(view?.state, "merged");
      assert.equal(view?.updatedAt, now);
      // Merged: never read again, and the next ship opens a new merge request.
      gl.mergeRequests[0].state = "opened";
      now += 60_000;
      assert.equal((await mrs.view(SESSION))?.state, "merged");
      gl.mergeRequests[0].state = "merged";
      // GitLab deleted the merged branch: the lease on what lvmh pushed is stale; the branch is made again.
      state.remote = null;
      state.dirty = true;
      state.patch = state.commitPatch = added("d.txt", "d");
      const out = await mrs.ship(SESSION, { title: "Next" });
      assert.equal(out.created, true);
      assert.equal(out.mergeRequest.iid, 2);
      assert.equal(pushes.at(-1)!.lease, null);
    });

    await t.step("GitLab's own message on a refusal → UpstreamError", async () => {
      connected = "revoked";
      state.dirty = true;
      const error = await mrs.ship(SESSION, { title: "x" }).catch((e) => e);
      assert.ok(error instanceof UpstreamError);
      assert.match(error.message, /GitLab answered 401.*401 Unauthorized/);
      assert.ok(!error.message.includes("revoked"));
    });
  } finally {
    db.close();
    await gl.close();
  }
});

Deno.test("createGitlabMergeRequests: the connected user's name and commit e-mail", async () => {
  const gl = startGitlabFixture({ token: TOKEN, username: "ann", projects: [] });
  try {
    const api = createGitlabMergeRequests({
      credential: () => TOKEN,
      status: () => ({ connected: true, baseUrl: gl.url }),
    });
    assert.deepEqual(await api.user(), { username: "ann", name: "Test User", email: "ann@example.invalid" });
    await assert.rejects(api.get("no/such", 1), /GitLab answered 404/);
  } finally {
    await gl.close();
  }
});
