/**
 * What a person types into the search box, made into an FTS5 query that cannot fail. Every term reaches FTS5
 * inside double quotes (its own quotes doubled), so FTS5's operators (`AND`, `NEAR(`, `:`, `^`, `*`) are never
 * read from user text; the only syntax lvmh adds is its own: words (all required), `"phrases"`, a trailing `*`
 * for a prefix, and a leading `-` to exclude. An unbalanced quote makes the rest plain words.
 */

/** One term of a query: a word or a phrase, maybe a prefix, maybe excluded. */
export interface QueryTerm {
  text: string;
  phrase: boolean;
  prefix: boolean;
  exclude: boolean;
}

/** A parsed query: its terms, and the FTS5 MATCH expression (null when nothing in it can match). */
export interface ParsedQuery {
  terms: QueryTerm[];
  match: string | null;
}

/** Terms kept from one query: a 10 KB paste is searched by its first words, not refused. */
export const MAX_TERMS = 32;
/** Characters kept of one term. */
export const MAX_TERM_CHARS = 200;

/** Characters the tokenizer keeps in a token (letters, digits, private use): a term needs at least one. */
const TOKEN_CHAR = /[\p{L}\p{N}\p{Co}]/u;
// Control characters (NUL included) and lone surrogates become spaces: they never belong to a word.
const CONTROL = /[\p{Cc}\p{Cs}\uFFFE\uFFFF]/gu;

/**
 * Parse a query as typed. Never throws.
 * @returns the terms and their MATCH expression; `match` is null when no term can match anything (empty text,
 * `*` alone, exclusions only).
 */
export function parseQuery(input: string): ParsedQuery {
  const text = input.replace(CONTROL, " ");
  const terms: QueryTerm[] = [];
  let i = 0;
  while (i < text.length && terms.length < MAX_TERMS) {
    while (i < text.length && /\s/.test(text[i])) i++;
    if (i >= text.length) break;
    let exclude = false;
    if (text[i] === "-" && i + 1 < text.length && !/\s/.test(text[i + 1])) {
      exclude = true;
      i++;
    }
    if (text[i] === '"') {
      const close = text.indexOf('"', i + 1);
      if (close !== -1) {
        let end = close + 1;
        const prefix = text[end] === "*";
        while (text[end] === "*") end++;
        add(terms, { text: text.slice(i + 1, close), phrase: true, prefix, exclude });
        i = end;
        continue;
      }
      // Unbalanced: the quote is dropped and what follows is read as plain words.
      i++;
      continue;
    }
    let end = i;
    while (end < text.length && !/\s/.test(text[end]) && text[end] !== '"') end++;
    const word = text.slice(i, end);
    const bare = word.replace(/\*+$/, "");
    add(terms, { text: bare, phrase: false, prefix: bare.length < word.length, exclude });
    i = end;
  }
  return { terms, match: matchOf(terms) };
}

function add(terms: QueryTerm[], term: QueryTerm): void {
  const text = term.text.slice(0, MAX_TERM_CHARS).trim();
  if (!TOKEN_CHAR.test(text)) return;
  terms.push({ ...term, text });
}

function quoted(term: QueryTerm): string {
  return `"${term.text.replaceAll('"', '""')}"${term.prefix ? "*" : ""}`;
}

function matchOf(terms: QueryTerm[]): string | null {
  const wanted = terms.filter((t) => !t.exclude);
  // FTS5 has no "everything but": a query of exclusions alone matches nothing.
  if (!wanted.length) return null;
  const excluded = terms.filter((t) => t.exclude);
  let match = wanted.map(quoted).join(" AND ");
  if (excluded.length) match = `(${match})` + excluded.map((t) => ` NOT ${quoted(t)}`).join("");
  return match;
}
