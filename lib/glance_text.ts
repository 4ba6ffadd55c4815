/**
 * The text a session list shows of a session, made the same way by the daemon (`lib/session_glance.ts`) and
 * the browser: a prompt's first line as a title, an answer's last line as plain text (the answer is Markdown,
 * the list shows no markup), a tool call by its main argument.
 */

/** Longest title made from a prompt; prompts are cut at a word when one ends near the limit. */
export const TITLE_CHARS = 60;
/** Longest activity line. */
export const LINE_CHARS = 140;

function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max);
  const space = cut.lastIndexOf(" ");
  return (space > max * 0.6 ? cut.slice(0, space) : cut).trimEnd() + "…";
}

/** The first non-empty line of `text`, clipped to `max` characters; null when there is none. */
export function firstLine(text: string, max = TITLE_CHARS): string | null {
  const line = text.split("\n").map((l) => l.trim()).find(Boolean);
  return line ? clip(line, max) : null;
}

/**
 * The last line of Markdown `text` with words in it, as plain text clipped to `max` characters; null when
 * there is none (a closing code fence or a rule is skipped for the line before it).
 */
export function lastLine(text: string, max = LINE_CHARS): string | null {
  // From the end: a long streamed text must not be split whole on every delta.
  let end = text.length;
  while (end > 0) {
    const start = text.lastIndexOf("\n", end - 1) + 1;
    const line = plainLine(text.slice(start, end));
    if (line) return clip(line, max);
    end = start - 1;
  }
  return null;
}

/**
 * True when `lastLine(text)` is surely not null, known without reading the Markdown: the last line with
 * anything in it starts with a letter, and no rule of `plainLine` removes a letter that starts a line (each
 * starts at a mark: a backtick, `>`, `#`, `|`, `!`, `[`, `<`, `*`, `_`, `~`, a list's bullet or number).
 */
export function surelyHasLine(text: string): boolean {
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) <= 32) end--;
  if (end === 0) return false;
  // indexOf finds a character ten times faster than lastIndexOf (memchr): a one-line answer needs no more.
  let start = text.indexOf("\n") < 0 ? 0 : text.lastIndexOf("\n", end - 1) + 1;
  while (text.charCodeAt(start) <= 32) start++;
  const c = text.charCodeAt(start) | 32; // ASCII letters in lower case
  return (c >= 97 && c <= 122) || (text.charCodeAt(start) > 127 && LETTER.test(text[start]));
}

const LETTER = /^\p{L}/u;

/** Characters a backslash escapes in Markdown, shown as themselves. */
const ESCAPED = /\\([\\`*_{}\[\]()#+\-.!~|<>])/g;
/** Private-use stand-ins for escaped characters and code spans while the markup around them is removed. */
const SLOT = "\uE000";
const SLOT_RE = /\uE000(\d+)\uE001/g;

/** A line that shows nothing: a code fence, a thematic break, a table's rule. */
const BARE = /^(`{3,}|~{3,})|^([-*_])(\s*\2){2,}$|^\|?(\s*:?-+:?\s*\|)+\s*:?-*:?\s*\|?$/;
/** Emphasis and strikethrough marks around text that starts and ends with a non-space (CommonMark's rule). */
const MARKS = [
  /(\*\*|~~|\*)(?=\S)(.+?)(?<=\S)\1/g,
  /(?<![\p{L}\p{N}_])(__|_)(?=\S)(.+?)(?<=\S)\1(?![\p{L}\p{N}_])/gu,
];

/**
 * One line of Markdown as plain text: block marks (heading, quote, list item, task box), fences, rules and
 * table rules dropped, table cells joined by " · ", links and images by their text, inline code, emphasis and
 * strikethrough without their marks, escapes resolved. What is not markup stays, as the page shows it (`2 * 3`,
 * `snake_case`, a lone `[`, raw HTML). Trimmed; "" when nothing readable is left.
 */
export function plainLine(line: string): string {
  let s = line.trim();
  if (BARE.test(s)) return "";
  const kept: string[] = [];
  const keep = (text: string) => `${SLOT}${kept.push(text) - 1}\uE001`;
  s = s.replace(ESCAPED, (_, c: string) => keep(c))
    .replace(/(`+)(.+?)\1/g, (_, _ticks: string, code: string) => keep(code.trim()))
    .replace(/^(>\s?)+/, "")
    .replace(/^([-*+]|\d{1,9}[.)])\s+/, "")
    .replace(/^\[[ xX]\]\s+/, "");
  if (/^#{1,6}\s/.test(s)) s = s.replace(/^#{1,6}\s+/, "").replace(/\s+#+$/, "");
  if (s.length > 1 && s.startsWith("|") && s.endsWith("|")) {
    s = s.slice(1, -1).split("|").map((cell) => cell.trim()).filter(Boolean).join(" · ");
  }
  s = s.replace(/!\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/\[([^\]]+)\]\([^)]*\)/g, "$1")
    .replace(/\[([^\]]+)\]\[[^\]]*\]/g, "$1")
    .replace(/<((?:https?|mailto):[^>\s]+)>/g, "$1");
  for (const mark of MARKS) s = s.replace(mark, "$2");
  return s.replace(SLOT_RE, (_, i: string) => kept[Number(i)]).replace(/\s+/g, " ").trim();
}

/** The end of the last non-empty line of `text` (what is being written now), at most `max` characters. */
export function streamTail(text: string, max = LINE_CHARS): string | null {
  const line = lastLine(text, Infinity);
  if (!line || line.length <= max) return line;
  const cut = line.slice(-max);
  const space = cut.indexOf(" ");
  return "…" + (space >= 0 && space < max * 0.4 ? cut.slice(space + 1) : cut).trimStart();
}

/** The argument a person recognises a call by (command, path, pattern), or the first short string. */
export function toolHint(toolName: string, args: unknown): string {
  const a = args && typeof args === "object" ? args as Record<string, unknown> : {};
  const keys = ["command", "path", "file_path", "pattern", "agent", "action"];
  const v = keys.map((k) => a[k]).find((x) => typeof x === "string") ??
    Object.values(a).find((x) => typeof x === "string");
  const hint = typeof v === "string" ? firstLine(v, 80) : null;
  return hint ? `${toolName} ${hint}` : toolName;
}

/** The last folder of a path (`/home/me/src/app/` → `app`). */
export function lastFolder(path: string | null | undefined): string | null {
  const parts = (path ?? "").split(/[\\/]+/).filter(Boolean);
  return parts.at(-1) ?? null;
}

/** A session's title: pi's name, else its first prompt's first line, else the cwd's last folder, else its id. */
export function titleOf(
  s: { id: string; name?: string | null; cwd?: string | null },
  firstPrompt: string | null | undefined,
): string {
  return s.name?.trim() || firstPrompt || lastFolder(s.cwd) || s.id;
}
