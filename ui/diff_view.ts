/**
 * A file's unified diff (git's, as `GET /api/sessions/:id/changes` carries it) as rows to render: one column
 * on a phone, old and new side by side on a wide screen. Pure functions; the Changes view renders them.
 */

/** One line of a diff: a hunk header, an added, deleted or context line, or git's note (rename, binary). */
export interface DiffLine {
  kind: "hunk" | "add" | "del" | "ctx" | "meta";
  text: string;
  /** Line numbers in the old and new file (context lines have both). */
  old?: number;
  new?: number;
}

/** A row of the side-by-side layout: the old side, the new side, or a hunk header across both. */
export interface SplitRow {
  hunk?: string;
  left?: DiffLine;
  right?: DiffLine;
}

/** The lines of a file's diff after git's header (`diff --git`, `index`, `---`, `+++`), numbered. */
export function diffLines(diff: string): DiffLine[] {
  const out: DiffLine[] = [];
  let oldNo = 0, newNo = 0, inHunk = false;
  const lines = diff.split("\n");
  if (lines.at(-1) === "") lines.pop();
  for (const line of lines) {
    const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (hunk) {
      oldNo = Number(hunk[1]);
      newNo = Number(hunk[2]);
      inHunk = true;
      out.push({ kind: "hunk", text: line });
    } else if (!inHunk) {
      // git's header: only what a reader needs (renames, modes, binary) is kept.
      if (/^(diff --git |index |--- |\+\+\+ )/.test(line)) continue;
      out.push({ kind: "meta", text: line });
    } else if (line.startsWith("+")) out.push({ kind: "add", text: line.slice(1), new: newNo++ });
    else if (line.startsWith("-")) out.push({ kind: "del", text: line.slice(1), old: oldNo++ });
    else if (line.startsWith("\\")) out.push({ kind: "meta", text: line });
    else out.push({ kind: "ctx", text: line.slice(1), old: oldNo++, new: newNo++ });
  }
  return out;
}

/** The side-by-side rows: each run of deletions paired line by line with the additions that follow it. */
export function splitRows(lines: readonly DiffLine[]): SplitRow[] {
  const rows: SplitRow[] = [];
  let dels: DiffLine[] = [], adds: DiffLine[] = [];
  const flush = () => {
    for (let i = 0; i < Math.max(dels.length, adds.length); i++) rows.push({ left: dels[i], right: adds[i] });
    dels = [];
    adds = [];
  };
  for (const l of lines) {
    if (l.kind === "del") {
      if (adds.length) flush();
      dels.push(l);
    } else if (l.kind === "add") adds.push(l);
    else {
      flush();
      if (l.kind === "hunk" || l.kind === "meta") rows.push({ hunk: l.text });
      else rows.push({ left: l, right: l });
    }
  }
  flush();
  return rows;
}

/** The one-letter mark of a file's status, as `git status --short` shows it. */
export function statusMark(status: "added" | "modified" | "deleted" | "renamed"): string {
  return { added: "A", modified: "M", deleted: "D", renamed: "R" }[status];
}
