/** The plugin in-process: message mapping, repo detection, and configurations that must stay harmless. */
import assert from "node:assert/strict";
import { waitFor } from "../testing/daemon.ts";
import { fakePi } from "../testing/fake_pi.ts";
import { createLvmhAgent, messageImages, Origins, repoFromRemote, toMessage } from "../plugin/lvmh-agent.mjs";
import { opts, tempHome } from "../testing/plugin_host.ts";

Deno.test("lvmh-agent maps pi messages to the protocol's Message shape", () => {
  const a = toMessage({
    role: "assistant",
    content: [
      { type: "thinking", thinking: "hmm" },
      { type: "text", text: "Hi " },
      {
        type: "toolCall",
        id: "c1",
        name: "bash",
        arguments: { command: "ls" },
      },
      { type: "text", text: "there" },
    ],
    stopReason: "toolUse",
    timestamp: 1,
  }, "assistant-1-3");
  assert.deepEqual(a, {
    role: "assistant",
    id: "assistant-1-3",
    text: "Hi there",
    thinking: "hmm",
    toolCalls: [{ id: "c1", name: "bash", argsJson: '{"command":"ls"}' }],
    toolCallId: null,
    stopReason: "toolUse",
  });
  const r = toMessage({
    role: "toolResult",
    toolCallId: "c1",
    toolName: "bash",
    content: [{ type: "text", text: "x" }, {
      type: "image",
      data: "",
      mimeType: "image/png",
    }],
    isError: true,
  }, "t");
  assert.equal(r.text, "x[image]");
  assert.equal(r.toolCallId, "c1");
  assert.equal(r.isError, true);
  assert.equal(
    toMessage({ role: "user", content: "plain" }, "u").text,
    "plain",
  );
  const custom = toMessage({
    role: "custom",
    customType: "note",
    content: "a note",
  }, "c");
  assert.equal(custom.role, "system");
  assert.equal(custom.piRole, "custom");
  assert.equal(custom.text, "a note");
  const bash = toMessage({
    role: "bashExecution",
    command: "ls",
    output: "a\n",
  }, "b");
  assert.equal(bash.role, "user");
  assert.equal(bash.text, "!ls\na\n");
  assert.equal(
    toMessage({ role: "compactionSummary", summary: "short" }, "s").text,
    "short",
  );
  assert.equal(
    toMessage({ role: "user", content: "x".repeat(300_000) }, "big").text
      .length,
    100_000,
  );
});

Deno.test("lvmh-agent reads group/project from git remotes", () => {
  assert.equal(
    repoFromRemote("git@gitlab.example.com:group/sub/project.git"),
    "group/sub/project",
  );
  assert.equal(
    repoFromRemote("https://gitlab.example.com/group/project.git"),
    "group/project",
  );
  assert.equal(
    repoFromRemote("https://user@gitlab.example.com/group/project"),
    "group/project",
  );
  assert.equal(
    repoFromRemote("ssh://git@gitlab.example.com:2222/group/project.git"),
    "group/project",
  );
  assert.equal(repoFromRemote("/local/path"), null);
  assert.equal(repoFromRemote("https://host/only"), null);
});

Deno.test(
  "lvmh-agent stays silent and harmless whatever the configuration",
  opts,
  async () => {
    await using h = await tempHome();
    const none = fakePi("silent-1");
    createLvmhAgent({ env: {}, home: h.home })(none.pi);
    assert.equal(none.handlerCount(), 0, "no URL/token: nothing registered");

    // A URL no WebSocket accepts: the factory and every handler still return normally.
    const bad = fakePi("silent-2");
    const secret = "s3cret-token-value";
    createLvmhAgent({ url: `::not a url::?token=${secret}`, token: secret, home: h.home })(bad.pi);
    await bad.fire("session_start", { reason: "startup" });
    await bad.fire("agent_start");
    await bad.fire("message_start", {
      message: { role: "user", content: "x", timestamp: 1 },
    });
    await bad.fire("agent_end", { messages: [] });
    await bad.fire("session_shutdown", { reason: "quit" });
    await waitFor(() => h.log().includes("silent-2"), "the failure logged");
    assert.ok(h.log().includes("***"), h.log());
    assert.equal(h.log().includes(secret), false, "the token never reaches the log");

    // A pi whose ctx throws everywhere: handlers swallow it.
    const broken = fakePi("silent-3");
    createLvmhAgent({
      url: "ws://127.0.0.1:9/agent/ws",
      token: "t",
      home: h.home,
    })(broken.pi);
    broken.ctx.sessionManager = null;
    await broken.fire("session_start", { reason: "startup" });
    await broken.fire("agent_end", { messages: null });
    await waitFor(
      () => h.log().includes("handler session_start failed"),
      "the handler error logged",
    );
  },
);

/** A 1×1 PNG and its sha256 (what the daemon's image store names it). */
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

Deno.test("lvmh-agent: a user message's images are sha256 parts, from the web prompt it shows when matched", async () => {
  const digest = async (b64: string) =>
    Array.from(
      new Uint8Array(
        await crypto.subtle.digest("SHA-256", Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))),
      ),
    ).map((b) => b.toString(16).padStart(2, "0")).join("");
  const pngSha = await digest(PNG);
  const other = "R0lGODlhAQABAAAAACw="; // some GIF-ish bytes pi might hold after re-encoding
  const otherSha = await digest(other);

  // Typed in the terminal: the image is pi's own, and the text has no [image] marker any more.
  const terminal = toMessage({
    role: "user",
    content: [{ type: "text", text: "look" }, { type: "image", data: PNG, mimeType: "image/png" }],
    timestamp: 1,
  }, "u1");
  assert.equal(terminal.text, "look");
  assert.deepEqual(terminal.images, [
    { type: "image", mimeType: "image/png", sha256: pngSha, bytes: 70, source: "terminal" },
  ]);
  // Without images nothing changes.
  assert.equal(toMessage({ role: "user", content: [{ type: "text", text: "x" }] }, "u").images, undefined);

  const origins = new Origins();
  const a = origins.add({ promptId: "p1", by: "alice", message: "same", images: [] });
  const b = origins.add({
    promptId: "p2",
    by: "bob",
    message: "what is this?",
    images: [{ mimeType: "image/png", data: PNG }],
  });
  const c = origins.add({ promptId: "p3", by: "carol", message: "same" });
  assert.equal(origins.size, 3);
  // pi 1.6.0 appends notes after a blank line; a terminal prompt with other text matches nothing.
  assert.equal(origins.take("not a web prompt"), null);
  assert.equal(origins.take([{ type: "text", text: "what is this?\n\n[Image: resized]" }]), b);
  // Equal texts: the oldest first (pi takes prompts in order).
  assert.equal(origins.take("same"), a);
  assert.equal(origins.take([{ type: "text", text: "same" }]), c);
  assert.equal(origins.take("same"), null, "each prompt is matched once");

  // The same bytes: the prompt's image. Re-encoded but all there: the prompt's in order. Fewer: pi's own.
  const same = messageImages([{ type: "text", text: "t" }, {
    type: "image",
    data: PNG,
    mimeType: "image/png",
  }], b);
  assert.deepEqual(same.map((i: { source: string; sha256: string }) => [i.source, i.sha256]), [[
    "web",
    pngSha,
  ]]);
  const reencoded = messageImages([{ type: "image", data: other, mimeType: "image/jpeg" }], b);
  assert.deepEqual(reencoded, [{
    type: "image",
    mimeType: "image/png",
    sha256: pngSha,
    bytes: 70,
    source: "web",
  }]);
  const two = origins.add({
    message: "two",
    images: [{ mimeType: "image/png", data: PNG }, { mimeType: "image/png", data: PNG }],
  });
  const dropped = messageImages([{ type: "image", data: other, mimeType: "image/png" }], two);
  assert.deepEqual(dropped.map((i: { source: string; sha256: string }) => [i.source, i.sha256]), [[
    "terminal",
    otherSha,
  ]]);
  const kept = messageImages([{ type: "image", data: PNG, mimeType: "image/png" }], two);
  assert.deepEqual(
    kept.map((i: { source: string }) => i.source),
    ["web"],
    "one dropped, the other is the prompt's",
  );
  const msg = toMessage(
    {
      role: "user",
      content: [{ type: "text", text: "what is this?" }, { type: "image", data: PNG, mimeType: "image/png" }],
    },
    "u2",
    b,
  );
  assert.equal(msg.images?.[0].source, "web");

  // Bounded: a prompt pi never showed does not pile up.
  const many = new Origins();
  for (let i = 0; i < 60; i++) many.add({ message: `m${i}` });
  assert.equal(many.size, 50);
  assert.equal(many.take("m0"), null, "the oldest were forgotten");
  assert.ok(many.take("m59"));
});
