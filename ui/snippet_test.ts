import assert from "node:assert/strict";
import { hitHref, snippetParts } from "./snippet.ts";

Deno.test("snippetParts() marks what sits between « and », as text", () => {
  assert.deepEqual(snippetParts("a «b» c «<img src=x>»"), [
    { text: "a ", mark: false },
    { text: "b", mark: true },
    { text: " c ", mark: false },
    { text: "<img src=x>", mark: true },
  ]);
  assert.deepEqual(snippetParts("«open"), [{ text: "open", mark: true }]);
  assert.deepEqual(snippetParts(""), []);
});

Deno.test("hitHref() opens the session at the hit's event", () => {
  assert.equal(hitHref("s 1", 42), "/sessions/s%201?at=42");
  assert.equal(hitHref("s1", 0), "/sessions/s1");
});
