/**
 * A query matched in JavaScript, with the index's own rules, for the events the index has not reached yet
 * (lib/search/sqlite_index.ts searches them by reading them): tokens as FTS5's `unicode61` tokenizer with
 * `remove_diacritics 2` makes them (runs of letters, digits and private-use characters, case-folded, accents
 * of Latin letters removed), each term a phrase of its tokens (the last one a prefix for `word*`), every term
 * required and every `-term` excluded. A test holds it to FTS5's answers on the same texts.
 */
import type { QueryTerm } from "./query.ts";

const TOKEN = /[\p{L}\p{N}\p{Co}]+/gu;
const LATIN_MARKS = /(?<=\p{Script=Latin})\p{M}+/gu;
const HAS_NON_ASCII = /[^ -~]/; // anything but printable ASCII (tokens hold no spaces or controls)

/** The tokens of a text, as the index makes them. */
export function tokensOf(text: string): string[] {
  const found = text.toLowerCase().match(TOKEN) ?? [];
  return found.map((t) =>
    HAS_NON_ASCII.test(t) ? t.normalize("NFD").replace(LATIN_MARKS, "").normalize("NFC") : t
  );
}

/** A query compiled for matching texts: each term as its tokens. */
export interface TextMatcher {
  /** Whether a text matches every wanted term and no excluded one. */
  test(text: string): boolean;
  /**
   * Of each wanted term, its longest token when it is plain ASCII letters and digits: a text with no character
   * beyond ASCII can only match if it holds each of them (ignoring case).
   */
  requiredAscii: string[];
}

/** Compile the terms of a parsed query (lib/search/query.ts); null when nothing can match. */
export function textMatcher(terms: readonly QueryTerm[]): TextMatcher | null {
  const compiled = terms.map((t) => ({ tokens: tokensOf(t.text), prefix: t.prefix, exclude: t.exclude }))
    .filter((t) => t.tokens.length > 0);
  const wanted = compiled.filter((t) => !t.exclude);
  const excluded = compiled.filter((t) => t.exclude);
  if (!wanted.length) return null;
  const requiredAscii = wanted.map((t) => t.tokens.reduce((a, b) => b.length > a.length ? b : a))
    .filter((t) => /^[a-z0-9]+$/.test(t));
  return {
    requiredAscii,
    test(text) {
      const tokens = tokensOf(text);
      return wanted.every((t) => hasPhrase(tokens, t.tokens, t.prefix)) &&
        !excluded.some((t) => hasPhrase(tokens, t.tokens, t.prefix));
    },
  };
}

/** Whether `phrase` occurs in `tokens` as consecutive tokens (its last one as a prefix when `prefix`). */
function hasPhrase(tokens: readonly string[], phrase: readonly string[], prefix: boolean): boolean {
  const last = phrase.length - 1;
  outer: for (let i = 0; i + last < tokens.length; i++) {
    for (let k = 0; k < last; k++) if (tokens[i + k] !== phrase[k]) continue outer;
    const t = tokens[i + last];
    if (prefix ? t.startsWith(phrase[last]) : t === phrase[last]) return true;
  }
  return false;
}
