/**
 * "N waiting" in the top bar: every pending approval of every session, each a link to its card on the
 * session page. Hidden when nothing waits.
 */
import type { Approval, SessionSummary } from "../lib/protocol.ts";

interface Props {
  pending: Approval[];
  sessions: ReadonlyMap<string, SessionSummary>;
}

/** The page and anchor of one approval's card. */
export function approvalHref(a: Approval): string {
  return `/sessions/${encodeURIComponent(a.sessionId)}#approval-${encodeURIComponent(a.id)}`;
}

export function WaitingBadge({ pending, sessions }: Props) {
  if (pending.length === 0) return null;
  return (
    <details class="waiting" data-waiting={pending.length}>
      <summary>
        <span class="waiting-count">{pending.length}</span> waiting
      </summary>
      <ul class="waiting-list" aria-label="Tool calls waiting for approval">
        {pending.map((a) => {
          const s = sessions.get(a.sessionId);
          return (
            <li key={a.id}>
              <a href={approvalHref(a)} data-approval-link={a.id}>
                <span class="tool-name">{a.toolName}</span>{" "}
                {/* The title the sessions list shows (pi's name, else the first prompt, else the folder). */}
                <span class="muted small">in {s?.title || s?.name || a.sessionId}</span>
              </a>
            </li>
          );
        })}
      </ul>
    </details>
  );
}
