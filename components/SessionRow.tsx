/**
 * One session in the sessions list: its title, what it is doing now (running with the tool or the last
 * streamed line, waiting for approval, idle with the last assistant line, offline), cost so far and last
 * activity.
 */
import type { SessionSummary } from "../lib/protocol.ts";
import { formatCost, relativeTime, shortPath } from "../lib/ui/format.ts";
import { type Glance, groupOf, lastLine, sessionTitle } from "../lib/ui/glance.ts";

/** The row's activity line: what a person reads to know whether the session needs them. */
function activity(s: SessionSummary, g: Glance | undefined): { kind: string; text: string } {
  const group = groupOf(s);
  if (group === "needs-you") {
    return { kind: "waiting", text: `waiting for approval${g?.activeTool ? `: ${g.activeTool}` : ""}` };
  }
  if (group === "running") {
    const now = g?.activeTool ?? (g?.streamLine ? lastLine(g.streamLine) : null);
    return { kind: "running", text: now ? `running: ${now}` : "running" };
  }
  const last = g?.lastText ? `: ${g.lastText}` : "";
  return group === "offline"
    ? { kind: "offline", text: `offline${last}` }
    : { kind: "idle", text: `idle${last}` };
}

export function SessionRow({ s, now, glance }: { s: SessionSummary; now: number; glance?: Glance }) {
  const where = s.repo ?? shortPath(s.cwd || "?");
  const title = sessionTitle(s, glance?.firstPrompt);
  const act = activity(s, glance);
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
          <span class="name" title={s.id}>{title}</span>
          <span class={`activity ${act.kind}`} data-activity={act.kind}>{act.text}</span>
          <span class="where" title={s.repo ?? s.cwd}>{where}</span>
        </span>
        <span class="meta">
          {s.waiting > 0 && (
            <span class="badge waiting" data-waiting-session={s.waiting}>
              {s.waiting} waiting
            </span>
          )}
          <span class={`badge ${s.agent ? "container" : "local"}`}>{s.agent ? "container" : "local"}</span>
          <span class={`state ${s.online && s.state === "running" ? "running" : "settled"}`}>
            {!s.online ? "offline" : s.state === "running" ? "running" : "settled"}
          </span>
          {s.model && <span class="model" title={s.provider ?? ""}>{s.model}</span>}
          {glance && glance.cost > 0 && (
            <span class="cost" title="cost so far">{formatCost(glance.cost)}</span>
          )}
          {s.lastEventAt !== null
            ? <span class="when" title="last activity">{relativeTime(s.lastEventAt, now)}</span>
            : <span class="when" title="no activity yet">started {relativeTime(s.startedAt, now)}</span>}
        </span>
      </a>
    </li>
  );
}
