/**
 * An abort, model or name change that comes again with the same `commandId` (a daemon replica taking a session
 * over sends again what the old holder may have written before it died) is run once and answered each time,
 * in-process against a loopback fake daemon with the built plugin.
 */
import assert from "node:assert/strict";
import { waitFor } from "../testing/daemon.ts";
import { fakePi } from "../testing/fake_pi.ts";
import { createLvmhAgent } from "../plugin/lvmh-agent.mjs";
import { fakeDaemon, opts, tempHome } from "../testing/plugin_host.ts";

Deno.test("command once: a repeated abort stops the run once and is answered again", opts, async () => {
  await using d = fakeDaemon();
  await using h = await tempHome();
  const fake = fakePi("cmd-once");
  createLvmhAgent({ url: d.url, token: d.token, home: h.home })(fake.pi);
  await fake.fire("session_start", { reason: "startup" });
  await fake.fire("agent_start");
  await waitFor(() => d.frames.some((f) => f.type === "agent_start"), "welcomed");
  const results = (id: string) => d.frames.filter((f) => f.type === "command_result" && f.commandId === id);

  d.send({ type: "abort", commandId: "a1" });
  await waitFor(() => results("a1").length === 1, "answered");
  d.send({ type: "abort", commandId: "a1" });
  await waitFor(() => results("a1").length === 2, "the repeat answered");
  assert.equal(fake.aborts, 1, "pi was aborted once");
  assert.ok(results("a1").every((r) => r.ok === true));
  await waitFor(() => /abort a1 came again: not run twice/.test(h.log()), "logged");

  d.send({ type: "abort", commandId: "a2" });
  await waitFor(() => results("a2").length === 1, "a new commandId runs");
  assert.equal(fake.aborts, 2);
  await fake.fire("session_shutdown", { reason: "quit" });
});
