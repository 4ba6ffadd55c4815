/**
 * Markdown for agent text, safe on the server and in the browser alike.
 *
 * Why markdown-it with `html: false` rather than marked + DOMPurify: markdown-it escapes every raw HTML tag
 * in the source and rejects `javascript:`, `vbscript:`, `file:` and non-image `data:` link targets itself, so
 * its output is safe without a DOM, which lets server rendering and islands share one renderer.
 */
import MarkdownIt from "markdown-it";
import { highlight } from "./highlight.ts";

const SAFE_SCHEMES = /^(?:https?:|mailto:|#|\/(?!\/)|\.{0,2}\/)/i;

// Fenced code is highlighted (`ui/highlight.ts` escapes it); markdown-it wraps the result in
// <pre><code class="language-x">, and the `hljs` class on that code element is added below.
const md = new MarkdownIt({
  html: false,
  linkify: true,
  breaks: false,
  typographer: false,
  highlight: (code: string, lang: string) => highlight(code, lang || null),
});
const defaultFence = md.renderer.rules.fence!;
md.renderer.rules.fence = (tokens, idx, options, env, self) =>
  defaultFence(tokens, idx, options, env, self).replace("<pre><code", '<pre class="code"><code data-hl');

// Stricter than markdown-it's own blocklist: only an allowlist of schemes (and relative links) survive.
md.validateLink = (url: string): boolean =>
  SAFE_SCHEMES.test(url.trim()) || !/^[a-z][a-z0-9+.-]*:/i.test(url.trim());

// Links open in a new tab without handing the page to the target, and carry no referrer.
const defaultLinkOpen = md.renderer.rules.link_open ??
  ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  tokens[idx].attrSet("target", "_blank");
  tokens[idx].attrSet("rel", "noopener noreferrer nofollow");
  return defaultLinkOpen(tokens, idx, options, env, self);
};
// Images would let a message make the browser fetch arbitrary URLs (and CSP blocks them anyway): show alt text.
md.renderer.rules.image = (tokens, idx) => md.utils.escapeHtml(`[image: ${tokens[idx].content || "image"}]`);

/** Largest text rendered as Markdown; longer text is shown as preformatted plain text (escaped) instead. */
export const MARKDOWN_MAX_CHARS = 200_000;

/**
 * Render Markdown to an HTML string whose tags all come from markdown-it (raw HTML in `text` is escaped).
 * @param text untrusted Markdown source
 * @returns HTML safe to assign to `innerHTML`
 */
export function renderMarkdown(text: string): string {
  if (text.length > MARKDOWN_MAX_CHARS) return `<pre>${md.utils.escapeHtml(text)}</pre>`;
  return md.render(text);
}

/** HTML of texts that no longer change, least recently used forgotten first. */
export class HtmlCache {
  #html = new Map<string, string>();

  constructor(private readonly render: (text: string) => string, private readonly max: number) {}

  get size(): number {
    return this.#html.size;
  }

  html(text: string): string {
    let html = this.#html.get(text);
    if (html === undefined) {
      html = this.render(text);
      if (this.#html.size >= this.max) this.#html.delete(this.#html.keys().next().value!);
    } else this.#html.delete(text); // to the back: recently used
    this.#html.set(text, html);
    return html;
  }
}

/**
 * Finished messages' Markdown, ~1 KB each, more than a long page shows. A page of older history rebuilds the
 * conversation, and every message on the page rendered its Markdown again: frames of 100–117 ms with 450
 * messages, 33–50 ms remembering it (bench/ui_history.ts).
 */
const finished = new HtmlCache(renderMarkdown, 2000);

/** `renderMarkdown` for text that no longer changes (a finished message); not for text still streaming. */
export function renderMarkdownFinished(text: string): string {
  return finished.html(text);
}
