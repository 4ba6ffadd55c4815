import assert from "node:assert/strict";
import { v8FlagsArg } from "./v8_flags.ts";

const root = new URL("../", import.meta.url);

Deno.test("v8 flags: `deno task start` and the image's CMD run the daemon with DAEMON_V8_FLAGS", async () => {
  const tasks = JSON.parse(await Deno.readTextFile(new URL("deno.json", root))).tasks;
  assert.ok(tasks.start.split(" ").includes(v8FlagsArg()), tasks.start);
  const cmd = (await Deno.readTextFile(new URL("Dockerfile", root))).match(/^CMD (\[.*\])$/m)?.[1];
  assert.ok(cmd, "the Dockerfile has a CMD in exec form");
  assert.ok((JSON.parse(cmd) as string[]).includes(v8FlagsArg()), cmd);
});

Deno.test("v8 flags: a test's own flags come after the daemon's, in one argument", () => {
  assert.equal(v8FlagsArg(["--expose-gc"]), "--v8-flags=--no-allocation-site-pretenuring,--expose-gc");
});
