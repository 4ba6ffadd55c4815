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

Deno.test(
  "prompt_once: a prompt still queued for pi at /reload is refused, then taken once by the next run",
  opts,
  async () => {
    await using d = fakeDaemon();
    await using h = await tempHome();
    const fake = fakePi("once-reload");
    createLvmhAgent({ url: d.url, token: d.token, home: h.home })(fake.pi);
    await fake.fire("session_start", { reason: "startup" });
    await d.waitFrame((f) => f.type === "hello", "hello");
    const results = (id: string) => d.frames.filter((f) => f.type === "command_result" && f.commandId === id);
    const prompt = { type: "prompt", promptId: "r1", commandId: "r1", message: "queued at the reload" };

    // pi is busy without a run of ours (between a run's end and idle): the prompt waits in the plugin.
    fake.idle = false;
    const checks = fake.idleChecks;
    d.send({ ...prompt, deliverAs: "followUp" });
    await waitFor(() => fake.idleChecks > checks, "the plugin holds the prompt for pi");
    assert.equal(results("r1").length, 0, "not answered while queued");

    await fake.fire("session_shutdown", { reason: "reload" });
    const refusal = await waitFor(() => results("r1")[0], "the queued prompt refused at the reload");
    assert.equal(refusal.ok, false);
    assert.match(String(refusal.error), /pi is reloading; prompt not delivered/);
    await waitFor(() => /prompt r1 not delivered: pi is reloading/.test(h.log()), "logged");
    assert.deepEqual(fake.sent, [], "pi never got it");

    // The daemon sends it again while pi is still inside the reload: no run to take it.
    d.send({ ...prompt, deliverAs: "followUp" });
    await waitFor(() => results("r1").length === 2, "refused with no run");
    assert.match(String(results("r1")[1].error), /no live pi session/);

    // The reload's factory run, on the same socket: the daemon's next try reaches pi, once.
    const next = fakePi("once-reload");
    createLvmhAgent({ url: d.url, token: d.token, home: h.home })(next.pi);
    await next.fire("session_start", { reason: "reload" });
    d.send({ ...prompt, deliverAs: "followUp" });
    await waitFor(() => results("r1").length === 3, "taken after the reload");
    assert.equal(results("r1")[2].ok, true);
    d.send({ ...prompt, deliverAs: "followUp" }); // a late repeat: answered again, not run
    await waitFor(() => results("r1").length === 4, "the repeat answered");
    assert.equal(results("r1")[3].ok, true);
    assert.deepEqual(next.sent.map((s) => s.message), ["queued at the reload"], "pi got it once");
    assert.deepEqual(fake.sent, []);
    assert.equal(d.hellos(), 1, "one socket throughout");
    await next.fire("session_shutdown", { reason: "quit" });
  },
);

Deno.test(
  "prompt_once: a prompt still queued when pi quits is refused before the plugin's bye",
  opts,
  async () => {
    await using d = fakeDaemon();
    await using h = await tempHome();
    const fake = fakePi("once-quit");
    createLvmhAgent({ url: d.url, token: d.token, home: h.home })(fake.pi);
    await fake.fire("session_start", { reason: "startup" });
    await d.waitFrame((f) => f.type === "hello", "hello");
    fake.idle = false;
    const checks = fake.idleChecks;
    d.send({ type: "prompt", promptId: "q1", commandId: "q1", message: "queued at quit" });
    await waitFor(() => fake.idleChecks > checks, "the plugin holds the prompt for pi");
    await fake.fire("session_shutdown", { reason: "quit" });
    const refusal = d.frames.findIndex((f) => f.type === "command_result" && f.commandId === "q1");
    const bye = d.frames.findIndex((f) => f.type === "bye");
    assert.ok(refusal >= 0 && bye > refusal, "refused, then bye");
    assert.equal(d.frames[refusal].ok, false);
    assert.match(String(d.frames[refusal].error), /pi session ended \(quit\); prompt not delivered/);
    assert.deepEqual(fake.sent, []);
  },
);

Deno.test(
  "prompt_once: a prompt refused because pi's ctx went stale is not delivered later as well",
  opts,
  async () => {
    await using d = fakeDaemon();
    await using h = await tempHome();
    const fake = fakePi("once-stale");
    createLvmhAgent({ url: d.url, token: d.token, home: h.home })(fake.pi);
    await fake.fire("session_start", { reason: "startup" });
    await d.waitFrame((f) => f.type === "hello", "hello");
    const isIdle = fake.ctx.isIdle;
    fake.ctx.isIdle = () => {
      throw new Error("This extension ctx is stale");
    };
    d.send({ type: "prompt", promptId: "s1", commandId: "s1", message: "on a stale ctx" });
    const refusal = await d.waitFrame((f) => f.type === "command_result" && f.commandId === "s1", "refused");
    assert.equal(refusal.ok, false);
    assert.match(String(refusal.error), /stale/);
    fake.ctx.isIdle = isIdle;
    await fake.fire("agent_start"); // pumps the queue: nothing is left in it
    d.send({ type: "prompt", promptId: "s2", commandId: "s2", message: "the next one" });
    await d.waitFrame((f) => f.type === "command_result" && f.commandId === "s2", "the next one answered");
    assert.deepEqual(fake.sent.map((s) => s.message), ["the next one"], "the refused one never reached pi");
    await fake.fire("session_shutdown", { reason: "quit" });
  },
);
