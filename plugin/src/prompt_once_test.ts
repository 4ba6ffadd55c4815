import assert from "node:assert/strict";
import { TakenPrompts } from "./prompt_once.ts";

Deno.test("TakenPrompts: a promptId runs once; a repeat is ignored until answered, then answered again", () => {
  const t = new TakenPrompts();
  assert.deepEqual(t.take("p1"), { run: true });
  assert.deepEqual(
    t.take("p1"),
    { run: false, answered: false },
    "still queued: the first answers",
  );
  t.answered("p1", true);
  assert.deepEqual(
    t.take("p1"),
    { run: false, answered: true },
    "answered: ok again, not run",
  );
  assert.deepEqual(
    t.take(undefined),
    { run: true },
    "a frame without an id always runs",
  );
  assert.deepEqual(t.take(""), { run: true });
});

Deno.test("TakenPrompts: a refused prompt is forgotten (a repeat may try again); ids are bounded", () => {
  const t = new TakenPrompts(3);
  t.take("r");
  t.answered("r", false);
  assert.deepEqual(t.take("r"), { run: true });
  for (const id of ["a", "b", "c"]) t.take(id);
  assert.equal(t.size, 3);
  assert.deepEqual(t.take("r"), { run: true }, "the oldest id went first");
  assert.deepEqual(t.take("c"), { run: false, answered: false });
  t.answered("unknown", true);
  assert.equal(t.size, 3);
  t.answered("b", true);
  t.forgetUnanswered(); // the run that queued them ended: only the answered one is still known
  assert.deepEqual(t.take("b"), { run: false, answered: true });
  assert.deepEqual(t.take("c"), { run: true });
});
