/**
 * Feature `prompt_once`, in-process against a loopback fake daemon with the built plugin: `hello` lists it, and
 * a prompt frame that comes again (the daemon re-sends a kept hook prompt after a restart or reconnect) is
 * handed to pi once and answered each time it is answered for, on the same socket and after a reconnect.
 */
import assert from "node:assert/strict";
import { waitFor } from "../testing/daemon.ts";
import { fakePi } from "../testing/fake_pi.ts";
import { createLvmhAgent } from "../plugin/lvmh-agent.mjs";
import { fakeDaemon, opts, tempHome } from "../testing/plugin_host.ts";
import { Feature } from "../lib/wire.ts";

Deno.test(
  "prompt_once: hello lists it; a repeated promptId reaches pi once and is answered again",
  opts,
  async () => {
    await using d = fakeDaemon();
    await using h = await tempHome();
    const fake = fakePi("once-1");
    createLvmhAgent({ url: d.url, token: d.token, home: h.home })(fake.pi);
    await fake.fire("session_start", { reason: "startup" });
    await fake.fire("agent_start"); // a run: prompts are steered into it at once
    await waitFor(() => d.frames.some((f) => f.type === "agent_start"), "welcomed");
    const hello = await d.waitFrame((f) => f.type === "hello", "hello");
    assert.deepEqual(hello.features, [Feature.promptOnce]);
    const results = (id: string) => d.frames.filter((f) => f.type === "command_result" && f.commandId === id);
    const prompt = {
      type: "prompt",
      promptId: "k1",
      commandId: "k1",
      message: "kept hook prompt",
      deliverAs: "steer",
    };

    d.send(prompt);
    // Again at once: answered again when pi took the first in the same turn (pi runs, so it did), else ignored.
    d.send(prompt);
    await waitFor(() => results("k1").length === 2, "both answered");
    d.send(prompt); // after the answer: answered again, not run
    await waitFor(() => results("k1").length === 3, "the repeat answered");
    assert.ok(results("k1").every((r) => r.ok === true));

    d.drop(); // a reconnect (a restarted daemon sends its kept prompt again)
    await waitFor(() => d.hellos() === 2, "the second hello");
    d.send(prompt);
    await waitFor(
      () => results("k1").length >= 3,
      "the repeat after the reconnect answered",
    );
    assert.ok(results("k1").every((r) => r.ok === true));

    d.send({
      ...prompt,
      promptId: "k2",
      commandId: "k2",
      message: "another prompt",
    });
    await waitFor(() => results("k2").length === 1, "a new promptId runs");
    assert.deepEqual(
      fake.sent.map((s) => s.message),
      ["kept hook prompt", "another prompt"],
      "each prompt reached pi exactly once",
    );
    await fake.fire("session_shutdown", { reason: "quit" });
  },
);
