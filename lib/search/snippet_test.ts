import assert from "node:assert/strict";
import { makeSnippet } from "./snippet.ts";
import { parseQuery } from "./query.ts";

const snip = (text: string, q: string) => makeSnippet(text, parseQuery(q).terms);

Deno.test("makeSnippet() marks words, prefixes and phrases as the index matches them", () => {
  assert.equal(snip("Deploy the app", "deploy"), "«Deploy» the app");
  assert.equal(snip("deploying now, deployed later", "deploy*"), "«deploying» now, «deployed» later");
  assert.equal(snip("the merge request is open", '"merge request"'), "the «merge request» is open");
  assert.equal(snip("Café au lait", "cafe"), "«Café» au lait");
  assert.equal(snip("see src/lib/store.ts", "lib/store"), "see src/«lib»/«store».ts");
  assert.equal(snip("keep flaky out", "keep -flaky"), "«keep» flaky out");
});

Deno.test("makeSnippet() cuts long text around the first match and never lets the text's « » pass as marks", () => {
  const long = Array.from({ length: 100 }, (_, i) => `w${i}`).join(" ");
  const out = snip(long.replace("w50", "needle"), "needle");
  assert.ok(out.startsWith("…w42 "), out);
  assert.ok(out.endsWith("…"), out);
  assert.match(out, /«needle»/);
  assert.equal(snip("«quoted» word", "word"), "‹quoted› «word»");
  assert.equal(snip("no match here", "zzz"), "no match here");
  assert.equal(snip("", "x"), "");
});
