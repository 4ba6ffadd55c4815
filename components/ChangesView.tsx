/**
 * The session's Changes view: the counts, the scope switch (everything since the base, or only what is not
 * committed), the commits, and each changed file with its diff highlighted by the file's language, unified
 * on a phone and side by side on a wide screen. Collapsed files (lockfiles, binaries) load their diff on
 * demand; cut ones say so. Refreshed when `refreshKey` changes (the page bumps it when a run settles).
 */
import { useEffect, useMemo, useState } from "preact/hooks";
import type { ChangedFile, Changes, ChangeScope } from "../lib/protocol.ts";
import { sessionChangedFile, sessionChanges } from "../ui/rest.ts";
import { type DiffLine, diffLines, splitRows, statusMark } from "../ui/diff_view.ts";
import { highlight, HIGHLIGHT_MAX_CHARS, languageOfPath } from "../ui/highlight.ts";
import { useWide } from "../ui/use_wide.ts";

/** Files whose diff is open at first: a review of a few files reads top to bottom; of many, from the list. */
const OPEN_FILES = 20;
/** ...and lines: past this the rest start folded, so a huge change renders at once. */
const OPEN_LINES = 3_000;

export function ChangesView({ sessionId, refreshKey }: { sessionId: string; refreshKey: number }) {
  const [scope, setScope] = useState<ChangeScope>("all");
  const [changes, setChanges] = useState<Changes | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  const [reload, setReload] = useState(0);
  const wide = useWide();

  useEffect(() => {
    let live = true;
    setLoading(true);
    sessionChanges(sessionId, scope).then(
      (c) => {
        if (!live) return;
        setChanges(c);
        setError(null);
      },
      (e) => live && setError(String((e as Error)?.message ?? e)),
    ).finally(() => live && setLoading(false));
    return () => {
      live = false;
    };
  }, [sessionId, scope, refreshKey, reload]);

  // Which files start open: the first ones, while their lines stay under the budget.
  const openAtFirst = useMemo(() => {
    const open = new Set<string>();
    let lines = 0;
    for (const f of changes?.files ?? []) {
      if (!f.diff || open.size >= OPEN_FILES) continue;
      lines += f.additions + f.deletions;
      if (lines > OPEN_LINES) break;
      open.add(f.path);
    }
    return open;
  }, [changes]);

  return (
    <section class="changes-view" aria-label="Changes" data-changes={changes ? "loaded" : "loading"}>
      <div class="changes-bar">
        <div class="scope-switch" role="group" aria-label="Compare">
          {(["all", "uncommitted"] as const).map((s) => (
            <button
              type="button"
              key={s}
              class={`ghost small ${scope === s ? "on" : ""}`}
              aria-pressed={scope === s}
              onClick={() => setScope(s)}
            >
              {s === "all" ? "Since base" : "Uncommitted"}
            </button>
          ))}
        </div>
        <button type="button" class="ghost small" disabled={loading} onClick={() => setReload((n) => n + 1)}>
          {loading ? "Loading…" : "Refresh"}
        </button>
      </div>
      {error && <p class="notice error" role="alert">{error}</p>}
      {changes && <Summary c={changes} />}
      {changes?.truncated && (
        <p class="notice small" role="status">
          This change is too large to show whole: some files are listed with their counts only.
        </p>
      )}
      {changes && changes.files.length > 0 && (
        <ul class="changed-files" aria-label="Changed files">
          {changes.files.map((f) => (
            <FileDiff
              key={`${scope}:${f.path}`}
              file={f}
              wide={wide}
              open={openAtFirst.has(f.path)}
              loadWhole={() => sessionChangedFile(sessionId, f.path, scope)}
            />
          ))}
        </ul>
      )}
    </section>
  );
}

function Summary({ c }: { c: Changes }) {
  const s = c.stats;
  if (!c.base && !c.head) return <p class="muted">This session's directory is not a git repository.</p>;
  return (
    <div class="changes-summary">
      <p>
        <strong data-stat="files">{s.files} {s.files === 1 ? "file" : "files"}</strong>{" "}
        <span class="add" data-stat="additions">+{s.additions}</span>{" "}
        <span class="del" data-stat="deletions">−{s.deletions}</span>
        {c.base && (
          <span class="muted small">
            {` against ${c.scope === "uncommitted" ? "HEAD" : c.base.branch} `}
            <code>{c.base.sha.slice(0, 8)}</code>
            {c.branch && (
              <>
                {" on "}
                <code>{c.branch}</code>
              </>
            )}
          </span>
        )}
      </p>
      {s.files === 0 && <p class="muted small">No changes.</p>}
      {c.commits.length > 0 && (
        <ol class="commits small" aria-label="Commits">
          {c.commits.map((k) => (
            <li key={k.sha}>
              <code>{k.sha.slice(0, 8)}</code> {k.title} <span class="muted">· {k.author}</span>
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}

function FileDiff(
  { file, wide, open, loadWhole }: {
    file: ChangedFile;
    wide: boolean;
    open: boolean;
    loadWhole: () => Promise<ChangedFile>;
  },
) {
  const [isOpen, setOpen] = useState(open);
  const [whole, setWhole] = useState<ChangedFile | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const shown = whole ?? file;
  const lang = languageOfPath(file.path);
  const load = () => loadWhole().then(setWhole, (e) => setLoadError(String((e as Error)?.message ?? e)));
  return (
    <li class="changed-file" data-path={file.path} data-status={file.status}>
      <details open={isOpen} onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
        <summary>
          <span class={`status s-${file.status}`} title={file.status}>{statusMark(file.status)}</span>
          <span class="path wrap">
            {file.oldPath && <span class="muted">{file.oldPath} →</span>}
            {file.path}
          </span>
          <span class="counts small">
            {file.binary ? <span class="muted">binary</span> : (
              <>
                <span class="add">+{file.additions}</span> <span class="del">−{file.deletions}</span>
              </>
            )}
          </span>
        </summary>
        {isOpen && (
          <div class="file-body">
            {shown.diff !== undefined && <DiffTable diff={shown.diff} lang={lang} wide={wide} />}
            {shown.diff === undefined && file.collapsed && !file.binary && (
              <p class="small muted">
                Lockfile: diff folded.{" "}
                <button type="button" class="ghost small" onClick={load}>Show diff</button>
              </p>
            )}
            {file.binary && <p class="small muted">Binary file: no text diff.</p>}
            {shown.truncated && (
              <p class="small muted" data-truncated>
                {shown.diff === undefined ? "Diff too large to show." : "Diff cut: too large to show whole."}
                {!whole && !file.binary && (
                  <>
                    {" "}
                    <button type="button" class="ghost small" onClick={load}>Load more</button>
                  </>
                )}
              </p>
            )}
            {loadError && <p class="notice error small">{loadError}</p>}
          </div>
        )}
      </details>
    </li>
  );
}

function Code({ line, lang }: { line: DiffLine; lang: string | null }) {
  // Highlighted per line: no state crosses lines, which is wrong only inside multi-line strings or comments.
  return <code dangerouslySetInnerHTML={{ __html: highlight(line.text, lang ?? "") }} />;
}

function DiffTable({ diff, lang, wide }: { diff: string; lang: string | null; wide: boolean }) {
  const lines = useMemo(() => diffLines(diff), [diff]);
  const hl = diff.length <= HIGHLIGHT_MAX_CHARS ? lang : null;
  if (!wide) {
    return (
      <table class="diff unified">
        <tbody>
          {lines.map((l, i) =>
            l.kind === "hunk" || l.kind === "meta"
              ? (
                <tr key={i} class={l.kind}>
                  <td colSpan={3}>{l.text}</td>
                </tr>
              )
              : (
                <tr key={i} class={l.kind}>
                  <td class="no">{l.old ?? ""}</td>
                  <td class="no">{l.new ?? ""}</td>
                  <td class="text">
                    <span class="sign">{l.kind === "add" ? "+" : l.kind === "del" ? "-" : " "}</span>
                    <Code line={l} lang={hl} />
                  </td>
                </tr>
              )
          )}
        </tbody>
      </table>
    );
  }
  const rows = splitRows(lines);
  return (
    <table class="diff split">
      <tbody>
        {rows.map((r, i) =>
          r.hunk !== undefined
            ? (
              <tr key={i} class="hunk">
                <td colSpan={4}>{r.hunk}</td>
              </tr>
            )
            : (
              <tr key={i}>
                <td class="no">{r.left?.old ?? ""}</td>
                <td class={`text ${r.left ? r.left.kind : "empty"}`}>
                  {r.left && <Code line={r.left} lang={hl} />}
                </td>
                <td class="no">{r.right?.new ?? ""}</td>
                <td class={`text ${r.right ? r.right.kind : "empty"}`}>
                  {r.right && <Code line={r.right} lang={hl} />}
                </td>
              </tr>
            )
        )}
      </tbody>
    </table>
  );
}
