import assert from "node:assert/strict";
import { cloneReport, type PodLike, podView } from "./pod_state.ts";

const T0 = Date.parse("2026-12-01T10:00:00Z");
const pod = (status: PodLike["status"], extra: Partial<PodLike["metadata"]> = {}): PodLike => ({
  metadata: { name: "lvmh-w-s1", creationTimestamp: "2026-12-01T10:00:00Z", ...extra },
  status,
});
const scheduled = { type: "PodScheduled", status: "True" };
const initDone = (message: string, exitCode = 0, reason = exitCode ? "Error" : "Completed") => ({
  name: "clone",
  state: { terminated: { exitCode, reason, message } },
});

Deno.test("podView(): queued with the scheduler's message, failed once unschedulable past the timeout", () => {
  const p = pod({
    phase: "Pending",
    conditions: [{
      type: "PodScheduled",
      status: "False",
      reason: "Unschedulable",
      message: "0/3 nodes are available",
    }],
  });
  assert.deepEqual(podView(p, T0 + 1000, 300_000), { state: "queued", message: "0/3 nodes are available" });
  const late = podView(p, T0 + 301_000, 300_000);
  assert.equal(late.state, "failed");
  assert.match((late as { message: string }).message, /not scheduled after 300 s: 0\/3 nodes are available/);
  // Not yet looked at by the scheduler: queued, never failed by the timeout.
  assert.equal(podView(pod({ phase: "Pending" }), T0 + 999_000, 1000).state, "queued");
});

Deno.test("podView(): cloning, starting, running", () => {
  const cloning = pod({
    phase: "Pending",
    conditions: [scheduled],
    initContainerStatuses: [{ name: "clone", state: { running: {} } }],
  });
  assert.deepEqual(podView(cloning, T0, 1000), { state: "cloning" });
  const starting = pod({
    phase: "Pending",
    conditions: [scheduled],
    initContainerStatuses: [initDone("lvmh: base main " + "a".repeat(40) + " lvmh/s1")],
    containerStatuses: [{ name: "worker", state: { waiting: { reason: "PodInitializing" } } }],
  });
  assert.deepEqual(podView(starting, T0, 1000), { state: "starting" });
  const running = pod({
    ...starting.status,
    phase: "Running",
    containerStatuses: [{ name: "worker", state: { running: { startedAt: "x" } } }],
  });
  assert.deepEqual(podView(running, T0, 1000), { state: "running" });
});

Deno.test("podView(): failures carry the kubelet's or the clone's own words", () => {
  const clone = pod({
    phase: "Failed",
    conditions: [scheduled],
    initContainerStatuses: [initDone("fatal: Remote branch nope not found", 1)],
  });
  assert.deepEqual(podView(clone, T0, 1000), {
    state: "failed",
    message: "clone failed: fatal: Remote branch nope not found",
  });
  const pull = pod({
    phase: "Pending",
    conditions: [scheduled],
    initContainerStatuses: [{
      name: "clone",
      state: { waiting: { reason: "ImagePullBackOff", message: 'Back-off pulling image "nope:1"' } },
    }],
  });
  assert.deepEqual(podView(pull, T0, 1000), {
    state: "failed",
    message: 'ImagePullBackOff: Back-off pulling image "nope:1"',
  });
  const evicted = pod({
    phase: "Failed",
    reason: "Evicted",
    message: "The node was low on resource: memory.",
  });
  assert.deepEqual(podView(evicted, T0, 1000), {
    state: "failed",
    message: "Evicted: The node was low on resource: memory.",
  });
  const oomClone = pod({
    phase: "Failed",
    conditions: [scheduled],
    initContainerStatuses: [initDone("", 137, "OOMKilled")],
  });
  assert.match((podView(oomClone, T0, 1000) as { message: string }).message, /OOMKilled/);
});

Deno.test("podView(): a worker that ran and ended, by OOM or by a signal", () => {
  const ended = (exitCode: number, reason: string) =>
    pod({
      phase: "Failed",
      conditions: [scheduled],
      initContainerStatuses: [initDone("lvmh: kept")],
      containerStatuses: [{ name: "worker", state: { terminated: { exitCode, reason } } }],
    });
  assert.deepEqual(podView(ended(137, "OOMKilled"), T0, 1000), { state: "ended", exitCode: 137, oom: true });
  assert.deepEqual(podView(ended(143, "Error"), T0, 1000), { state: "ended", exitCode: 143, oom: false });
  assert.deepEqual(podView(ended(0, "Completed"), T0, 1000), { state: "ended", exitCode: 0, oom: false });
});

Deno.test("cloneReport(): the base the clone made, kept, or nothing before it ended well", () => {
  const sha = "0123456789abcdef0123456789abcdef01234567";
  assert.deepEqual(
    cloneReport(pod({ initContainerStatuses: [initDone(`lvmh: base main ${sha} lvmh/ab12cd34`)] })),
    {
      kept: false,
      baseBranch: "main",
      baseSha: sha,
      branch: "lvmh/ab12cd34",
    },
  );
  assert.deepEqual(cloneReport(pod({ initContainerStatuses: [initDone("lvmh: kept")] })), { kept: true });
  assert.equal(cloneReport(pod({ initContainerStatuses: [initDone(`lvmh: base main ${sha} x`, 1)] })), null);
  assert.equal(
    cloneReport(pod({ initContainerStatuses: [{ name: "clone", state: { running: {} } }] })),
    null,
  );
});
