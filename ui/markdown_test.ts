import assert from "node:assert/strict";
import { HtmlCache, renderMarkdown, renderMarkdownFinished } from "./markdown.ts";

Deno.test("renderMarkdown() renders common Markdown", () => {
  const html = renderMarkdown(
    "# Title\n\n**bold** and `code`\n\n```ts\nconst a = 1 < 2;\n```\n\n- one\n- two",
  );
  assert.match(html, /<h1>Title<\/h1>/);
  assert.match(html, /<strong>bold<\/strong>/);
  assert.match(html, /<code>code<\/code>/);
  // Fenced code is highlighted: escaped text inside highlight.js spans.
  assert.match(
    html,
    /<pre class="code"><code data-hl class="language-ts"><span class="hljs-keyword">const<\/span>/,
  );
  assert.match(html, /1<\/span> &lt; <span class="hljs-number">2/);
  assert.match(html, /<li>one<\/li>/);
});

Deno.test("renderMarkdown() escapes raw HTML", () => {
  const payloads = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)">x</a>',
    "<svg onload=alert(1)>",
    "<iframe src=//evil>",
  ];
  for (const p of payloads) {
    const html = renderMarkdown(p);
    assert.ok(!/<(script|img|a|svg|iframe)[\s>]/i.test(html), `raw tag survived: ${html}`);
  }
});

Deno.test("renderMarkdown() drops dangerous link schemes and keeps safe ones", () => {
  for (
    const href of [
      "javascript:alert(1)",
      "JAVASCRIPT:alert(1)",
      "vbscript:x",
      "data:text/html,<b>",
      "file:///etc",
    ]
  ) {
    const html = renderMarkdown(`[click](${href})`);
    assert.ok(!html.includes("<a"), `link kept for ${href}: ${html}`);
  }
  const ok = renderMarkdown("[docs](https://example.com/a?b=1) and [rel](./x.md)");
  assert.match(
    ok,
    /<a href="https:\/\/example.com\/a\?b=1" target="_blank" rel="noopener noreferrer nofollow">/,
  );
  assert.match(ok, /<a href=".\/x.md"/);
});

Deno.test("renderMarkdown() shows images as text, never as <img>", () => {
  const html = renderMarkdown("![alt <b>](https://example.com/x.png)");
  assert.ok(!html.includes("<img"));
  assert.match(html, /\[image: alt &lt;b&gt;\]/);
});

Deno.test("renderMarkdown() autolinks only http(s) URLs", () => {
  assert.match(renderMarkdown("see https://example.com"), /<a href="https:\/\/example.com"/);
  assert.ok(!renderMarkdown("see javascript:alert(1)").includes("<a"));
});

Deno.test("HtmlCache renders a text once, and forgets the least recently used past its bound", () => {
  const rendered: string[] = [];
  const cache = new HtmlCache((t) => (rendered.push(t), `<p>${t}</p>`), 2);
  assert.equal(cache.html("a"), "<p>a</p>");
  assert.equal(cache.html("b"), "<p>b</p>");
  assert.equal(cache.html("a"), "<p>a</p>");
  assert.deepEqual(rendered, ["a", "b"]);
  cache.html("c"); // b is the least recently used
  assert.equal(cache.size, 2);
  cache.html("a");
  cache.html("b");
  assert.deepEqual(rendered, ["a", "b", "c", "b"]);
});

Deno.test("renderMarkdownFinished() gives what renderMarkdown() gives", () => {
  const text = "# t\n\n```ts\nconst x = 1;\n```\n<script>x</script>";
  assert.equal(renderMarkdownFinished(text), renderMarkdown(text));
  assert.equal(renderMarkdownFinished(text), renderMarkdown(text));
});
