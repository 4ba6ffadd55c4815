/** The settle state machine on its own: pi 0.73.1's polled idle and 1.6.0's event. */
import assert from "node:assert/strict";
import { Settle } from "./settle.ts";
import { START_WAIT_MS } from "./constants.ts";

const idle = () => true;
const busy = () => false;

Deno.test("Settle on pi 0.73.1 reports a run once pi is idle after agent_end", () => {
  const s = new Settle(false);
  assert.equal(s.check(0, false, idle), "none", "nothing ran yet");
  assert.equal(s.agentStart(), false);
  assert.equal(s.check(0, false, idle), "none", "running");
  s.agentEnd();
  assert.equal(
    s.check(0, false, busy),
    "wait",
    "agent_end came but pi is not idle yet",
  );
  assert.equal(
    s.check(0, true, idle),
    "none",
    "a queued prompt of ours starts the next run first",
  );
  assert.equal(s.check(0, false, idle), "settled");
  assert.equal(s.check(0, false, idle), "none", "reported once");
});

Deno.test("Settle on pi 0.73.1 reports a missed settle when the next run starts before the poll", () => {
  const s = new Settle(false);
  s.agentStart();
  s.agentEnd();
  assert.equal(s.agentStart(), true, "the previous run's settle comes first");
  assert.equal(s.pending, false);
  s.agentEnd();
  assert.equal(s.check(0, false, idle), "settled");
});

Deno.test("Settle waits for the agent_start of a prompt it sent to an idle pi", () => {
  const s = new Settle(false);
  s.agentStart();
  s.agentEnd();
  assert.equal(s.mayStartRun(1000, idle), true);
  s.startedFromIdle(1000);
  assert.equal(
    s.mayStartRun(1001, idle),
    false,
    "a second prompt must not race the first",
  );
  assert.equal(
    s.check(1001, false, idle),
    "none",
    "pi only looks idle: its next run is on the way",
  );
  assert.equal(
    s.mayStartRun(1000 + START_WAIT_MS, idle),
    true,
    "bounded: a prompt pi ignored does not block",
  );
  assert.equal(s.mayStartRun(1000 + START_WAIT_MS, busy), false);
  assert.equal(
    s.agentStart(),
    true,
    "the earlier run settles before the new one",
  );
});

Deno.test("Settle on pi 1.6.0 never polls and reports pi's own agent_settled once per run", () => {
  const s = new Settle(true);
  assert.equal(s.nativeSettled(), false, "a settle for no run of ours");
  s.agentStart();
  s.agentEnd();
  assert.equal(s.check(0, false, idle), "none", "no polling on 1.6.0");
  assert.equal(s.agentStart(), false, "no missed settle on 1.6.0");
  s.agentEnd();
  assert.equal(s.nativeSettled(), true);
  assert.equal(s.nativeSettled(), false);
});

Deno.test("Settle reports a pending settle at shutdown only when no run is going", () => {
  const s = new Settle(false);
  s.agentStart();
  assert.equal(s.shutdown(), false, "still running");
  s.agentStart();
  s.agentEnd();
  assert.equal(s.shutdown(), true);
  assert.equal(s.shutdown(), false);
});
