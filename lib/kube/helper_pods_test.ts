/**
 * The helper Pod runner against the fake API server with the scripted kubelet: its stdout is read from
 * `pods/log` and checked against the byte count the Pod's wrapper puts in its termination message, so a log the
 * kubelet cut short (its rotation) fails the job instead of passing for its whole answer.
 */
import assert from "node:assert/strict";
import { startFakeKube } from "../../testing/fixtures/kube_api.ts";
import { HelperError, type HelperJob } from "../../docker/helper.ts";
import { KubeClient } from "./client.ts";
import { kubeHelperRunner, splitTermination } from "./helper_pods.ts";

const JOB: HelperJob = {
  kind: "diff",
  cmd: ["echo hello", "lvmh-diff"],
  workingCopy: null,
  network: false,
  secret: null,
  failure: "Cannot read the changes",
};

Deno.test("splitTermination() takes the stdout count off a termination message, when there is one", () => {
  assert.deepEqual(splitTermination("lvmh-stdout-bytes 12\nwarning: x\n"), {
    bytes: 12,
    stderr: "warning: x\n",
  });
  assert.deepEqual(splitTermination("lvmh: the daemon gave no helper input"), {
    bytes: null,
    stderr: "lvmh: the daemon gave no helper input",
  });
});

Deno.test("kube helper runner: the whole log is the answer; a log cut short fails the job", async () => {
  const fake = await startFakeKube({ kubelet: "script" });
  const client = new KubeClient({
    url: fake.url,
    namespace: fake.namespace,
    tokenFile: fake.tokenFile,
    caFile: fake.caFile,
  });
  const runner = kubeHelperRunner({
    client,
    image: "registry.example/lvmh-worker:1",
    agentUrl: "ws://127.0.0.1:9/agent/ws",
    agentToken: () => Promise.resolve("unused"),
    limits: { memoryBytes: null, cpus: null },
    nodeOf: () => null,
    pollMs: 20,
  });
  /** Run the job while the kubelet ends its Pod with `log` as its output and `written` bytes counted. */
  const runWith = async (log: string, written: number) => {
    const running = runner.run(JOB);
    const deadline = Date.now() + 10_000;
    let name: string | undefined;
    while (!(name = fake.list("pods")[0]?.metadata?.name as string | undefined)) {
      if (Date.now() > deadline) throw new Error("no helper Pod");
      await new Promise((r) => setTimeout(r, 10));
    }
    fake.setLogs(name, log, "helper");
    fake.setPodStatus(name, {
      phase: "Succeeded",
      containerStatuses: [{
        name: "helper",
        ready: false,
        restartCount: 0,
        image: "registry.example/lvmh-worker:1",
        imageID: "",
        state: {
          terminated: { exitCode: 0, reason: "Completed", message: `lvmh-stdout-bytes ${written}\n` },
        },
      }],
    });
    try {
      return await running;
    } finally {
      const gone = Date.now() + 10_000;
      while (fake.list("pods").length && Date.now() < gone) await new Promise((r) => setTimeout(r, 10));
    }
  };
  try {
    const whole = await runWith("héllo\n", new TextEncoder().encode("héllo\n").length);
    assert.equal(whole.stdout, "héllo\n");
    assert.equal(whole.stderr, "", "the count is not part of stderr");
    await assert.rejects(
      () => runWith("hel", 6),
      (e) => e instanceof HelperError && /cut short/.test(e.message),
    );
    assert.deepEqual(fake.list("pods"), [], "the helper Pod is removed either way");
  } finally {
    await fake.close();
  }
});
