/**
 * One session in the sessions list: its title, what it is doing now (running with the tool or the last
 * streamed line, waiting for approval, idle with the last assistant line, offline), cost so far and last
 * activity — all as the daemon reports them in the summary (`lib/session_glance.ts`).
 */
import type { SessionSummary } from "../lib/protocol.ts";
import { formatCost, relativeTime, shortPath } from "../ui/format.ts";
import { activeAt, activityText, groupOf } from "../ui/glance.ts";
import { mergeRequestBadge } from "../ui/merge_request_view.ts";
import { BudgetMarker } from "./BudgetBar.tsx";
import { PresenceCount, WheelMarker } from "./PresenceBar.tsx";

export function SessionRow({ s, now }: { s: SessionSummary; now: number }) {
  const where = s.repo ?? shortPath(s.cwd || "?");
  const at = s.lastActivityAt ?? s.lastEventAt;
  const mr = s.mergeRequest ? mergeRequestBadge(s.mergeRequest) : null;
  return (
    <li
      class={`session-row ${s.online ? "online" : "offline"} ${s.waiting > 0 ? "needs-you" : ""}`}
      data-session={s.id}
      data-group={groupOf(s)}
    >
      <a href={`/sessions/${encodeURIComponent(s.id)}`}>
        <span
          class={`dot ${s.online ? "on" : "off"}`}
          title={s.online ? "online" : "offline"}
          aria-label={s.online ? "online" : "offline"}
        >
        </span>
        <span class="main">
          <span class="name" title={s.id}>{s.title}</span>
          <span class={`activity ${s.activity.state}`} data-activity={s.activity.state}>
            {activityText(s.activity)}
          </span>
          <span class="where" title={s.repo ?? s.cwd}>{where}</span>
        </span>
        <span class="meta">
          {s.waiting > 0 && (
            <span class="badge waiting" data-waiting-session={s.waiting}>
              {s.waiting} waiting
            </span>
          )}
          <BudgetMarker budget={s.budget} />
          <PresenceCount sessionId={s.id} />
          <WheelMarker sessionId={s.id} />
          {mr && (
            <span
              class={`badge mr ${mr.tone}`}
              data-merge-request={s.mergeRequest!.iid}
              title="merge request"
            >
              {mr.text}
            </span>
          )}
          <span class={`badge ${s.agent ? "container" : "local"}`}>{s.agent ? "container" : "local"}</span>
          <span class={`state ${s.online && s.state === "running" ? "running" : "settled"}`}>
            {!s.online
              ? s.container === "stopped" || s.container === "crashed" ? s.container : "offline"
              : s.state === "running"
              ? "running"
              : "settled"}
          </span>
          {s.model && <span class="model" title={s.provider ?? ""}>{s.model}</span>}
          {s.cost > 0 && <span class="cost" title="cost so far">{formatCost(s.cost)}</span>}
          {at !== null
            ? <span class="when" title="last activity">{relativeTime(activeAt(s), now)}</span>
            : <span class="when" title="no activity yet">started {relativeTime(s.startedAt, now)}</span>}
        </span>
      </a>
    </li>
  );
}
