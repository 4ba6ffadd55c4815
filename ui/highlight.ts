/**
 * Syntax highlighting with highlight.js, the same on the server render and in the browser (streamed text is
 * rendered by the same Markdown renderer). Only the core and a set of languages an agent's work shows are
 * bundled, to keep the island bundle small. highlight.js escapes the code and emits only `<span class="hljs-…">`,
 * so its output is safe as HTML and needs no inline style (the colours are classes in `static/style.css`,
 * within the page's CSP).
 */
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import go from "highlight.js/lib/languages/go";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import markdown from "highlight.js/lib/languages/markdown";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import shell from "highlight.js/lib/languages/shell";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";

const LANGUAGES = {
  bash,
  css,
  diff,
  go,
  javascript,
  json,
  markdown,
  python,
  rust,
  shell,
  sql,
  typescript,
  xml,
  yaml,
};
for (const [name, lang] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, lang);

/** Longest code highlighted; longer code is shown escaped but plain (highlighting is linear but not free). */
export const HIGHLIGHT_MAX_CHARS = 100_000;

/** File extensions to highlight.js languages, for tool output whose path is known. */
const BY_EXT: Record<string, string> = {
  ts: "typescript",
  tsx: "typescript",
  mts: "typescript",
  js: "javascript",
  jsx: "javascript",
  mjs: "javascript",
  cjs: "javascript",
  json: "json",
  py: "python",
  rs: "rust",
  go: "go",
  sh: "bash",
  bash: "bash",
  css: "css",
  html: "xml",
  xml: "xml",
  svg: "xml",
  md: "markdown",
  yml: "yaml",
  yaml: "yaml",
  sql: "sql",
  diff: "diff",
  patch: "diff",
};

/** The language of a file path by its extension, or null when it has none we know. */
export function languageOfPath(path: string): string | null {
  const ext = /\.([A-Za-z0-9]+)$/.exec(path)?.[1]?.toLowerCase();
  return ext ? BY_EXT[ext] ?? null : null;
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/**
 * Highlight code to HTML spans. A known `lang` (or alias) is used as is; without one the language is
 * guessed only for longer snippets, since a guess on a line or two is mostly wrong.
 * @param code untrusted source text
 * @param lang a language name from a fence or a file extension
 * @returns escaped HTML made only of text and `<span class="hljs-…">`
 */
export function highlight(code: string, lang?: string | null): string {
  if (code.length > HIGHLIGHT_MAX_CHARS) return escapeHtml(code);
  const name = lang?.trim().toLowerCase();
  if (name && hljs.getLanguage(name)) {
    return hljs.highlight(code, { language: name, ignoreIllegals: true }).value;
  }
  if (name || code.length < 40) return escapeHtml(code);
  return hljs.highlightAuto(code).value;
}
