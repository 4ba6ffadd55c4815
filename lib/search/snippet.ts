/**
 * Snippets made in JavaScript: the index keeps no copy of the text (FTS5 contentless), so a hit's text is
 * read back from its event and its matches are found here, with the tokenizer's rules (letters, digits and
 * private-use characters make tokens; case and diacritics do not count). Matches get `«…»`; the text's own
 * guillemets become `‹ ›`, so every highlight is lvmh's.
 */
import type { QueryTerm } from "./query.ts";

/** Tokens of text shown around the first match. */
const BEFORE = 8;
const AFTER = 20;
const TOKEN = /[\p{L}\p{N}\p{Co}]+/gu;

/** A token as the index compares it: lower case, without diacritics. */
export function fold(token: string): string {
  return token.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();
}

interface Matcher {
  exact: Set<string>;
  prefixes: string[];
}

function matcherOf(terms: readonly QueryTerm[]): Matcher {
  const exact = new Set<string>();
  const prefixes: string[] = [];
  for (const term of terms) {
    if (term.exclude) continue;
    const tokens = [...term.text.matchAll(TOKEN)].map((m) => fold(m[0]));
    tokens.forEach((t, i) => (term.prefix && i === tokens.length - 1 ? prefixes.push(t) : exact.add(t)));
  }
  return { exact, prefixes };
}

function matches(m: Matcher, token: string): boolean {
  const f = fold(token);
  return m.exact.has(f) || m.prefixes.some((p) => f.startsWith(p));
}

/**
 * The part of `text` around its first match, matches marked `«…»` (neighbouring matches, as a phrase's words,
 * in one mark).
 */
export function makeSnippet(text: string, terms: readonly QueryTerm[]): string {
  const m = matcherOf(terms);
  const tokens = [...text.matchAll(TOKEN)].map((t) => ({
    start: t.index!,
    end: t.index! + t[0].length,
    hit: false,
  }));
  let first = -1;
  tokens.forEach((t, i) => {
    t.hit = matches(m, text.slice(t.start, t.end));
    if (t.hit && first < 0) first = i;
  });
  const from = Math.max(0, (first < 0 ? 0 : first) - BEFORE);
  const to = Math.min(tokens.length, from + BEFORE + AFTER);
  if (!tokens.length) return safe(text.slice(0, 200));
  const startChar = from === 0 ? 0 : tokens[from].start;
  const endChar = to === tokens.length ? text.length : tokens[to - 1].end;
  let out = from > 0 ? "…" : "";
  let at = startChar;
  for (let i = from; i < to; i++) {
    const t = tokens[i];
    if (!t.hit) continue;
    let j = i;
    // Join the next matches when only spaces lie between them.
    while (j + 1 < to && tokens[j + 1].hit && /^\s*$/.test(text.slice(tokens[j].end, tokens[j + 1].start))) {
      j++;
    }
    out += safe(text.slice(at, t.start)) + "«" + safe(text.slice(t.start, tokens[j].end)) + "»";
    at = tokens[j].end;
    i = j;
  }
  out += safe(text.slice(at, endChar));
  return (to < tokens.length ? out + "…" : out).replace(/\s+/g, " ").trim();
}

function safe(text: string): string {
  return text.replaceAll("«", "‹").replaceAll("»", "›");
}
