/**
 * A search snippet as text pieces: `GET /api/search` puts `«` and `»` around matches and nowhere else (the
 * text's own guillemets come as `‹ ›`), so the UI marks the pieces between them, always as text, never HTML.
 */

/** One piece of a snippet: plain text, or a match to highlight. */
export interface SnippetPart {
  text: string;
  mark: boolean;
}

/** Split a snippet at its marks; an unclosed `«` marks to the end. */
export function snippetParts(snippet: string): SnippetPart[] {
  const parts: SnippetPart[] = [];
  let mark = false;
  for (const piece of snippet.split(/([«»])/)) {
    if (piece === "«") mark = true;
    else if (piece === "»") mark = false;
    else if (piece) parts.push({ text: piece, mark });
  }
  return parts;
}

/** Where a hit opens: the session at that event (a session's own names open the session). */
export function hitHref(sessionId: string, seq: number): string {
  const base = `/sessions/${encodeURIComponent(sessionId)}`;
  return seq > 0 ? `${base}?at=${seq}` : base;
}
