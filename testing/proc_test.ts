import assert from "node:assert/strict";
import { preemptions, reniceThreads, statFields } from "./proc.ts";

/** A child that keeps one thread more than the machine has cores busy until killed: some must wait. */
function busyChild() {
  const spin = `const { Worker } = require("node:worker_threads");
    for (let i = 0; i < ${navigator.hardwareConcurrency}; i++) new Worker("for(;;){}", { eval: true });
    for(;;){}`;
  return new Deno.Command("node", { args: ["-e", spin], stdout: "null", stderr: "null" }).spawn();
}

/** The niceness of each thread of `pid` (field 19 of stat(5)). */
function niceOf(pid: number): number[] {
  return [...Deno.readDirSync(`/proc/${pid}/task`)].map((t) =>
    Number(statFields(`/proc/${pid}/task/${t.name}/stat`)[19 - 3])
  );
}

Deno.test("reniceThreads() sets every thread's niceness; preemptions() counts a busy process's and is 0 once it is gone", async () => {
  const child = busyChild();
  try {
    // Until node has started its threads (its worker's among them).
    const deadline = Date.now() + 10_000;
    while (niceOf(child.pid).length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const before = niceOf(child.pid);
    assert.ok(before.length >= 3, "node runs several threads");
    assert.ok(before.some((n) => n !== 7));
    reniceThreads(child.pid, 7);
    // Every thread, those node started meanwhile included.
    assert.deepEqual(new Set(niceOf(child.pid)), new Set([7]));
    // More busy threads than cores: the scheduler takes cores from them.
    while (preemptions(child.pid) === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.ok(preemptions(child.pid) > 0);
  } finally {
    child.kill("SIGKILL");
    await child.status;
  }
  assert.equal(preemptions(child.pid), 0);
  assert.throws(() => reniceThreads(child.pid, 7));
});
