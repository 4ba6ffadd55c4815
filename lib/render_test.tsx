import assert from "node:assert/strict";
import { renderToString } from "preact-render-to-string";
import { CSP, Island, propsJson, renderPage } from "./render.tsx";

function Hello({ name }: { name: string }) {
  return <p class="hello">Hello {name}</p>;
}

Deno.test("propsJson() cannot close its script element", () => {
  const json = propsJson({ text: "</script><script>alert(1)</script>", sep: "\u2028" });
  assert.ok(!json.includes("<"), json);
  assert.deepEqual(JSON.parse(json), { text: "</script><script>alert(1)</script>", sep: "\u2028" });
});

Deno.test("Island renders the marker, its props as JSON data and the server render", () => {
  const html = renderToString(<Island name="Hello" component={Hello} props={{ name: "<b>x</b>" }} />);
  assert.equal(
    html,
    '<div data-island="Hello" class="island"><script type="application/json">{"name":"\\u003cb>x\\u003c/b>"}</script>' +
      '<p class="hello">Hello &lt;b>x&lt;/b></p></div>',
  );
});

Deno.test("renderPage() answers HTML with the CSP and no inline script", async () => {
  const res = renderPage(<Hello name="page" />, { title: "T <1>", status: 404 });
  assert.equal(res.status, 404);
  assert.equal(res.headers.get("content-type"), "text/html; charset=utf-8");
  assert.equal(res.headers.get("content-security-policy"), CSP);
  assert.match(CSP, /script-src 'self'(;|$)/);
  assert.equal(res.headers.get("x-frame-options"), "DENY");
  const html = await res.text();
  assert.ok(html.startsWith('<!DOCTYPE html><html lang="en">'));
  assert.match(html, /<title>T &lt;1><\/title>/);
  assert.match(html, /<script type="module" src="\/static\/client.js"><\/script>/);
  // Every script element is either an external static script (the bundle, the service worker registration) or a JSON data block.
  for (const m of html.matchAll(/<script([^>]*)>/g)) {
    assert.ok(/src="\/static\/[a-z_]+\.js"|type="application\/json"/.test(m[1]), `inline script: ${m[0]}`);
  }
});
