import assert from "node:assert/strict";
import { lastLine, plainLine, streamTail, surelyHasLine } from "./glance_text.ts";

Deno.test("plainLine() shows a line of Markdown as the page reads it, without markup", async (t) => {
  const cases: [string, string][] = [
    ["See [the docs](https://example.com/docs) and [more][ref].", "See the docs and more."],
    ["![a chart](chart.png) above", "a chart above"],
    ["**Done**: tests *pass* and __build__ _too_ ~~fails~~", "Done: tests pass and build too fails"],
    ["Run `deno task ok` (or ``a`b``) first", "Run deno task ok (or a`b) first"],
    ["`**not bold**` stays as code", "**not bold** stays as code"],
    ["## Summary ##", "Summary"],
    ["> - [x] migrate the store", "migrate the store"],
    ["1. first step", "first step"],
    ["| file | lines |", "file · lines"],
    ["Open <https://example.com/a_b>", "Open https://example.com/a_b"],
    ["2 * 3 * 4 and snake_case_name and a_b_c.py", "2 * 3 * 4 and snake_case_name and a_b_c.py"],
    ["an \\*escaped\\* star and a lone [ bracket", "an *escaped* star and a lone [ bracket"],
    ["raw <b>html</b> is shown as written", "raw <b>html</b> is shown as written"],
    ["```ts", ""],
    ["---", ""],
    ["|---|:--:|", ""],
  ];
  for (const [markdown, plain] of cases) {
    await t.step(JSON.stringify(markdown), () => assert.equal(plainLine(markdown), plain));
  }
});

Deno.test("lastLine() is the last line with words, as plain text; streamTail() its end", () => {
  assert.equal(
    lastLine("Intro\n\nSee [the docs](https://example.com/x) and **more**.\n"),
    "See the docs and more.",
  );
  assert.equal(lastLine("Here it is:\n```ts\nconst a = 1;\n```\n"), "const a = 1;");
  assert.equal(lastLine("Done.\n\n---\n"), "Done.");
  assert.equal(lastLine("```\n\n"), null);
  assert.equal(lastLine(`**${"word ".repeat(40).trim()}**`, 20), "word word word word…");
  assert.equal(streamTail(`Reading [${"x".repeat(200)}](https://a)`, 10), "…xxxxxxxxxx");
});

Deno.test("surelyHasLine() is true only of texts that lastLine() makes a line of", () => {
  const sure = [
    "Done.",
    "Done.\n\n",
    "```ts\nx\n```\nAll set",
    "  Start **bold**",
    "Été au début",
    "plain\r\n",
  ];
  const unsure = [
    "",
    " \n\t\n",
    "Here:\n```",
    "![](chart.png)",
    "1. ![](x.png)",
    "**Bold**",
    "\u00a0word",
    "𝐀 math",
  ];
  for (const text of sure) {
    assert.equal(surelyHasLine(text), true, JSON.stringify(text));
    assert.notEqual(lastLine(text), null, JSON.stringify(text));
  }
  for (const text of unsure) assert.equal(surelyHasLine(text), false, JSON.stringify(text));
  // Every line of Markdown the plainLine() cases hold: never sure of one that shows nothing.
  for (const line of ["```ts", "---", "|---|:--:|", "> - [x] x", "## A ##", "[a](b)", "a ![](x)", "~~a~~"]) {
    if (surelyHasLine(line)) assert.notEqual(plainLine(line), "", JSON.stringify(line));
  }
});
