/**
 * The sessions page: every session, live through `/ws` (`session_list` frames replace the list), filtered by
 * text and by online state, most recent activity first.
 */
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { SessionSummary } from "../lib/protocol.ts";
import { SessionRow } from "../components/SessionRow.tsx";
import { SignInForm } from "../components/SignInForm.tsx";
import { credentialsAccepted, socketUrl } from "../lib/ui/api.ts";
import { connectLive, type LiveSocket } from "../lib/ui/live_socket.ts";
import { onRetryRequest, publishStatus } from "../lib/ui/status_bus.ts";
import { notifySettled } from "../lib/ui/notify.ts";

interface Props {
  sessions: SessionSummary[];
  now: number;
}

/** Sessions matching `query` (name, id, cwd, repo, model) and the online filter, latest activity first. */
function visible(sessions: SessionSummary[], query: string, onlineOnly: boolean): SessionSummary[] {
  const q = query.trim().toLowerCase();
  return sessions
    .filter((s) => !onlineOnly || s.online)
    .filter((s) => !q || [s.name, s.id, s.cwd, s.repo, s.model].some((f) => f?.toLowerCase().includes(q)))
    .sort((a, b) =>
      (b.lastEventAt ?? b.startedAt) - (a.lastEventAt ?? a.startedAt) || a.id.localeCompare(b.id)
    );
}

export default function SessionList(props: Props) {
  const [sessions, setSessions] = useState(props.sessions);
  const [query, setQuery] = useState("");
  const [onlineOnly, setOnlineOnly] = useState(false);
  const [now, setNow] = useState(props.now);
  const [needSignIn, setNeedSignIn] = useState(false);
  const live = useRef<LiveSocket | null>(null);
  const prev = useRef(new Map(props.sessions.map((s) => [s.id, s.state])));

  useEffect(() => {
    setNow(Date.now());
    const tick = setInterval(() => setNow(Date.now()), 30_000);
    live.current = connectLive({
      url: socketUrl,
      onStatus(s) {
        publishStatus(s);
        // Refused twice in a row: maybe the daemon's token changed. Only the REST API can tell a 401 apart.
        if (s.state === "retrying" && s.attempt >= 2) {
          credentialsAccepted().then((ok) => ok || setNeedSignIn(true));
        }
      },
      onFrame(frame) {
        if (frame.type !== "session_list") return;
        for (const s of frame.sessions) {
          if (prev.current.get(s.id) === "running" && s.state === "idle") notifySettled(s.id, s.name || s.id);
        }
        prev.current = new Map(frame.sessions.map((s) => [s.id, s.state]));
        setSessions(frame.sessions);
      },
    });
    // "/" jumps to the filter from anywhere on the page, as on many developer sites.
    const onKey = (e: KeyboardEvent) => {
      const t = e.target as HTMLElement | null;
      if (e.key !== "/" || e.ctrlKey || e.metaKey || e.altKey || t?.closest("input, textarea")) return;
      e.preventDefault();
      document.getElementById("filter")?.focus();
    };
    addEventListener("keydown", onKey);
    const online = () => live.current?.reconnectNow();
    addEventListener("online", online);
    const offRetry = onRetryRequest(online);
    return () => {
      clearInterval(tick);
      removeEventListener("online", online);
      removeEventListener("keydown", onKey);
      offRetry();
      live.current?.close();
    };
  }, []);

  // The tab tells how many agents are working, for a page kept open in the background.
  const runningCount = sessions.filter((s) => s.online && s.state === "running").length;
  useEffect(() => {
    document.title = `${runningCount ? `(${runningCount} running) ` : ""}Sessions · lvmh`;
  }, [runningCount]);

  const shown = useMemo(() => visible(sessions, query, onlineOnly), [sessions, query, onlineOnly]);
  const onlineCount = sessions.filter((s) => s.online).length;

  return (
    <>
      {needSignIn && (
        <div class="overlay">
          <SignInForm message="The daemon no longer accepts this browser's token." />
        </div>
      )}
      <main class="sessions-page">
        <div class="filters" role="search">
          <input
            type="search"
            id="filter"
            aria-label="Filter sessions"
            placeholder="Filter by name, path, repo or model (press /)"
            value={query}
            onInput={(e) => setQuery((e.target as HTMLInputElement).value)}
          />
          <label class="toggle">
            <input
              type="checkbox"
              id="online-only"
              checked={onlineOnly}
              onChange={(e) => setOnlineOnly((e.target as HTMLInputElement).checked)}
            />
            Online only
          </label>
          <span class="muted small count" aria-live="polite">
            {onlineCount} online · {sessions.length} total
          </span>
        </div>
        {shown.length > 0
          ? <ul class="session-list">{shown.map((s) => <SessionRow key={s.id} s={s} now={now} />)}</ul>
          : (
            <div class="empty">
              {sessions.length === 0
                ? (
                  <>
                    <p>No sessions yet.</p>
                    <p class="muted small">
                      Start <code>pi</code> with the lvmh plugin (and <code>LVMH_URL</code>,{" "}
                      <code>LVMH_TOKEN</code> set); it appears here as soon as it connects.
                    </p>
                  </>
                )
                : <p>No session matches the filter.</p>}
            </div>
          )}
      </main>
    </>
  );
}
