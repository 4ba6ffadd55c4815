/** One session in the sessions list; sessions with tool calls waiting for a person are marked. */
import type { SessionSummary } from "../lib/protocol.ts";
import { relativeTime, shortPath } from "../lib/ui/format.ts";

export function SessionRow({ s, now }: { s: SessionSummary; now: number }) {
  const where = s.repo ?? shortPath(s.cwd || "?");
  const running = s.online && s.state === "running";
  return (
    <li
      class={`session-row ${s.online ? "online" : "offline"} ${s.waiting > 0 ? "needs-you" : ""}`}
      data-session={s.id}
    >
      <a href={`/sessions/${encodeURIComponent(s.id)}`}>
        <span
          class={`dot ${s.online ? "on" : "off"}`}
          title={s.online ? "online" : "offline"}
          aria-label={s.online ? "online" : "offline"}
        >
        </span>
        <span class="main">
          <span class="name">{s.name || s.id}</span>
          <span class="where" title={s.repo ?? s.cwd}>{where}</span>
        </span>
        <span class="meta">
          {s.waiting > 0 && (
            <span class="badge waiting" data-waiting-session={s.waiting}>
              {s.waiting} waiting
            </span>
          )}
          <span class={`badge ${s.agent ? "container" : "local"}`}>{s.agent ? "container" : "local"}</span>
          <span class={`state ${running ? "running" : "settled"}`}>
            {!s.online ? "offline" : running ? "running" : "settled"}
          </span>
          {s.model && <span class="model" title={s.provider ?? ""}>{s.model}</span>}
          {s.lastEventAt !== null
            ? <span class="when" title="last activity">{relativeTime(s.lastEventAt, now)}</span>
            : <span class="when" title="no activity yet">started {relativeTime(s.startedAt, now)}</span>}
        </span>
      </a>
    </li>
  );
}
