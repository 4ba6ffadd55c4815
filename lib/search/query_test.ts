import assert from "node:assert/strict";
import { MAX_TERMS, parseQuery } from "./query.ts";

Deno.test("parseQuery() reads words, phrases, prefixes and exclusions", () => {
  const q = parseQuery('deploy* "merge request" -flaky -"dry run" plain');
  assert.deepEqual(q.terms.map((t) => [t.text, t.phrase, t.prefix, t.exclude]), [
    ["deploy", false, true, false],
    ["merge request", true, false, false],
    ["flaky", false, false, true],
    ["dry run", true, false, true],
    ["plain", false, false, false],
  ]);
  assert.equal(q.match, '("deploy"* AND "merge request" AND "plain") NOT "flaky" NOT "dry run"');
});

Deno.test("parseQuery() quotes FTS5's own syntax so it is searched as text", () => {
  assert.equal(parseQuery("NEAR(a b) OR c:d").match, '"NEAR(a" AND "b)" AND "OR" AND "c:d"');
  assert.equal(parseQuery('say "hi""').match, '"say" AND "hi"');
  assert.equal(parseQuery('a"b').match, '"a" AND "b"');
});

Deno.test("parseQuery() makes an unbalanced quote plain words", () => {
  const q = parseQuery('"unfinished phrase here');
  assert.deepEqual(q.terms.map((t) => [t.text, t.phrase]), [
    ["unfinished", false],
    ["phrase", false],
    ["here", false],
  ]);
});

Deno.test("parseQuery() finds nothing to match in symbols, lone stars, exclusions alone", () => {
  for (const text of ["", "   ", "*", "**", '"', '""', "-", "- -", "-only", "()", "\u0000\u0001", "…"]) {
    assert.equal(parseQuery(text).match, null, JSON.stringify(text));
  }
});

Deno.test("parseQuery() strips control characters and keeps at most MAX_TERMS terms", () => {
  assert.equal(parseQuery("a\u0000b\u001bc").match, '"a" AND "b" AND "c"');
  const many = parseQuery("word ".repeat(5000));
  assert.equal(many.terms.length, MAX_TERMS);
  assert.ok(many.terms.every((t) => t.text.length <= 200));
});
