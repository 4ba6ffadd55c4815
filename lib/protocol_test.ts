import assert from "node:assert/strict";
import {
  BranchName,
  parseBrowserFrame,
  parsePluginFrame,
  parseWith,
  PromptBody,
  RepoPath,
} from "./protocol.ts";

const hello = {
  v: 1,
  type: "hello",
  sessionId: "01a229db-3411-7695-a5b4-293100432386",
  seq: 0,
  ts: 1,
  session: { id: "01a229db-3411-7695-a5b4-293100432386", cwd: "/w", startedAt: 1 },
};

Deno.test("parsePluginFrame() accepts hello and fills snapshot defaults", () => {
  const r = parsePluginFrame(JSON.stringify(hello));
  assert.ok(r.ok);
  assert.equal(r.value.type, "hello");
  if (r.value.type === "hello") {
    assert.equal(r.value.session.name, null);
    assert.equal(r.value.session.agent, false);
  }
});

Deno.test("parsePluginFrame() keeps unknown extra fields (forward compatibility)", () => {
  const r = parsePluginFrame(
    JSON.stringify({ v: 1, type: "agent_start", sessionId: "a", seq: 1, ts: 1, future: [1] }),
  );
  assert.ok(r.ok);
  assert.deepEqual((r.value as Record<string, unknown>).future, [1]);
});

Deno.test("parsePluginFrame() names what is wrong", () => {
  const cases: [unknown, string, RegExp][] = [
    ["{", "bad_json", /JSON/],
    [[1], "bad_frame", /object/],
    [{ ...hello, v: 2 }, "bad_version", /2/],
    [{ ...hello, type: "nope" }, "bad_frame", /type/],
    [{ ...hello, seq: 3 }, "bad_frame", /seq/],
    [{ v: 1, type: "message_update", sessionId: "a", seq: 1, ts: 1 }, "bad_frame", /delta/],
    [{ v: 1, type: "agent_start", sessionId: "../etc", seq: 1, ts: 1 }, "bad_frame", /session id/],
    [{ v: 1, type: "agent_start", sessionId: "a", seq: -1, ts: 1 }, "bad_frame", /seq/],
  ];
  for (const [input, code, message] of cases) {
    const r = parsePluginFrame(typeof input === "string" ? input : JSON.stringify(input));
    assert.equal(r.ok, false, JSON.stringify(input));
    if (!r.ok) {
      assert.equal(r.code, code, JSON.stringify(input));
      assert.match(r.message, message);
    }
  }
});

Deno.test("parseBrowserFrame() accepts subscribe with optional after", () => {
  const r = parseBrowserFrame(JSON.stringify({ type: "subscribe", sessionId: "a", after: 5 }));
  assert.deepEqual(r, { ok: true, value: { type: "subscribe", sessionId: "a", after: 5 } });
  assert.equal(parseBrowserFrame('{"type":"subscribe"}').ok, false);
});

Deno.test("PromptBody defaults deliverAs to steer and rejects empty text", () => {
  assert.deepEqual(parseWith(PromptBody, { message: "hi" }), {
    ok: true,
    value: { message: "hi", deliverAs: "steer" },
  });
  assert.equal(parseWith(PromptBody, { message: "" }).ok, false);
});

Deno.test("RepoPath accepts group paths and rejects anything a shell or URL could misread", () => {
  for (const ok of ["group/project", "a/b/c", "my_group/my.project-2"]) {
    assert.ok(RepoPath.safeParse(ok).success, ok);
  }
  const bad = [
    "project",
    "../etc/passwd",
    "group/..",
    "-group/x",
    "group/-x",
    "group/pro ject",
    "group/x;rm -rf /",
    "group/$(id)",
    "https://gitlab.com/a/b",
    "a/b/",
    "/a/b",
    "a//b",
    "a/b.",
    "a/" + "x".repeat(300),
  ];
  for (const b of bad) assert.equal(RepoPath.safeParse(b).success, false, b);
});

Deno.test("BranchName rejects refs git or a shell would misread", () => {
  for (const ok of ["main", "feature/x-1", "release-1.2"]) assert.ok(BranchName.safeParse(ok).success, ok);
  for (const b of ["-x", "a..b", "a b", "x.lock", "a//b", "a/", "$(id)", "--upload-pack=x"]) {
    assert.equal(BranchName.safeParse(b).success, false, b);
  }
});
