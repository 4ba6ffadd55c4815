/**
 * The audit page (admins): every human action in the order it happened, a page at a time from
 * `GET /api/audit?after=&limit=`; "Load more" reads the next page after the last row shown, so new actions
 * appear at the end without a reload.
 */
import { useState } from "preact/hooks";
import { useAction } from "../ui/use_action.ts";
import { auditPage } from "../ui/rest.ts";
import type { AuditRow } from "../ui/types.ts";

interface Props {
  rows: AuditRow[];
  /** Rows per page (what the server read). */
  limit: number;
}

/** A short text of a row's detail: a prompt's text, an approval's decision, a token's name and role. */
function detailText(detail: unknown): string {
  if (detail === null || detail === undefined) return "";
  if (typeof detail !== "object") return String(detail);
  return Object.entries(detail as Record<string, unknown>)
    .map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(" · ").slice(0, 300);
}

function when(ms: number): string {
  return new Date(ms).toISOString().replace("T", " ").slice(0, 19);
}

export default function AuditLog(props: Props) {
  const [rows, setRows] = useState(props.rows);
  const [more, setMore] = useState(props.rows.length === props.limit);
  const { busy, error, run } = useAction();

  const loadMore = () =>
    run(async () => {
      const next = await auditPage(rows.at(-1)?.id ?? 0, props.limit);
      setRows((r) => [...r, ...next]);
      setMore(next.length === props.limit);
    });

  return (
    <main class="admin-page audit-page">
      <h1>Audit log</h1>
      <p class="muted small">Every human action, oldest first. The log is append-only.</p>
      {rows.length === 0 ? <p class="empty muted">Nothing has been done yet.</p> : (
        <table class="audit">
          <thead>
            <tr>
              <th>#</th>
              <th>when (UTC)</th>
              <th>who</th>
              <th>action</th>
              <th>session</th>
              <th>detail</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.id} data-audit-id={r.id} data-action={r.action}>
                <td class="muted">{r.id}</td>
                <td class="nowrap">{when(r.at)}</td>
                <td>
                  {r.actor}
                  {r.role && <span class="muted small">{` (${r.role})`}</span>}
                </td>
                <td class="action">
                  <code>{r.action}</code>
                </td>
                <td>
                  {r.sessionId && <a href={`/sessions/${encodeURIComponent(r.sessionId)}`}>{r.sessionId}</a>}
                </td>
                <td class="detail">{detailText(r.detail)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {error && <p class="error" role="alert">{error}</p>}
      <button type="button" class="ghost show-more" disabled={busy} onClick={() => void loadMore()}>
        {busy ? "Loading…" : more ? "Load more" : "Check for newer"}
      </button>
    </main>
  );
}
