/**
 * The sessions page: every session, live through the page's connection (a `session_list` replaces the
 * directory, `session_update` frames patch it), filtered by text and by online state, grouped as needs you /
 * running / idle / offline and most recent activity first within a group. Only the first `PAGE_ROWS` matches
 * are rendered (more on request), so 3,000 sessions stay fast. Each row says what its session does now, as
 * the daemon's summary carries it (title, activity, cost): the list reads no events.
 */
import { useEffect, useMemo, useState } from "preact/hooks";
import type { SessionSummary } from "../lib/protocol.ts";
import { SessionRow } from "../components/SessionRow.tsx";
import { pageLive } from "../ui/live.ts";
import { notifySettled } from "../ui/watch.ts";
import { useClock } from "../ui/use_clock.ts";
import { EMPTY_DIRECTORY } from "../ui/session_directory.ts";
import { useLive } from "../ui/use_live.ts";
import { GROUP_LABEL, groupOf, PAGE_ROWS, sortByGroup } from "../ui/glance.ts";
import { ContentSearch } from "../components/ContentSearch.tsx";

interface Props {
  /** The rows the server rendered: the first page, in the order shown. */
  sessions: SessionSummary[];
  now: number;
  /** Counts over every session, shown until the live list arrives (the props carry only the first page). */
  counts?: { total: number; online: number; waiting: number };
}

/**
 * Sessions matching `query` (title — pi's name or the first prompt —, id, cwd, repo, model) and the online
 * filter, by group and latest activity first.
 */
function visible(sessions: Iterable<SessionSummary>, query: string, onlineOnly: boolean): SessionSummary[] {
  const q = query.trim().toLowerCase();
  return sortByGroup(
    [...sessions]
      .filter((s) => !onlineOnly || s.online)
      .filter((s) => !q || [s.title, s.id, s.cwd, s.repo, s.model].some((f) => f?.toLowerCase().includes(q))),
  );
}

export default function SessionList(props: Props) {
  const dir = useLive((l) => l.sessions, EMPTY_DIRECTORY);
  const [query, setQuery] = useState("");
  const [onlineOnly, setOnlineOnly] = useState(false);
  const [limit, setLimit] = useState(PAGE_ROWS);
  const now = useClock(props.now);
  // The server's rows until the first list arrives (so the hydrated page shows what was rendered).
  const sessions = useMemo(() => dir.loaded ? [...dir.byId.values()] : props.sessions, [dir, props.sessions]);

  useEffect(() => {
    const topic = pageLive().sessions;
    let prev = new Map(props.sessions.map((s) => [s.id, s.state]));
    // Tell the person when a run they may be waiting for ends (notify.ts decides whether they asked to).
    const offSettled = topic.subscribe((d) => {
      for (const id of d.changed ?? d.byId.keys()) {
        const s = d.byId.get(id);
        if (s && prev.get(id) === "running" && s.state === "idle") notifySettled(id, s.name || id);
      }
      prev = new Map([...d.byId.values()].map((s) => [s.id, s.state]));
    });
    // "/" jumps to the filter from anywhere on the page, as on many developer sites.
    const onKey = (e: KeyboardEvent) => {
      const t = e.target as HTMLElement | null;
      if (e.key !== "/" || e.ctrlKey || e.metaKey || e.altKey || t?.closest("input, textarea")) return;
      e.preventDefault();
      document.getElementById("filter")?.focus();
    };
    addEventListener("keydown", onKey);
    return () => {
      offSettled();
      removeEventListener("keydown", onKey);
    };
  }, []);

  // The tab tells how many agents are working, for a page kept open in the background.
  const runningCount = useMemo(() => sessions.filter((s) => s.online && s.state === "running").length, [
    sessions,
  ]);
  useEffect(() => {
    document.title = `${runningCount ? `(${runningCount} running) ` : ""}Sessions · lvmh`;
  }, [runningCount]);

  const matches = useMemo(() => visible(sessions, query, onlineOnly), [sessions, query, onlineOnly]);
  const shown = matches.length > limit ? matches.slice(0, limit) : matches;
  const onlineCount = useMemo(
    () => dir.loaded || !props.counts ? sessions.filter((s) => s.online).length : props.counts.online,
    [sessions],
  );
  const waitingCount = useMemo(
    () => dir.loaded || !props.counts ? sessions.filter((s) => s.waiting > 0).length : props.counts.waiting,
    [sessions],
  );
  const total = dir.loaded || !props.counts ? sessions.length : props.counts.total;
  const titles = useMemo(() => Object.fromEntries(sessions.map((s) => [s.id, s.title])), [sessions]);

  return (
    <main class="sessions-page">
      <div class="filters" role="search">
        <input
          type="search"
          id="filter"
          aria-label="Filter sessions"
          placeholder="Filter by name, path, repo, model or what was said (press /)"
          value={query}
          onInput={(e) => (setQuery((e.target as HTMLInputElement).value), setLimit(PAGE_ROWS))}
        />
        <label class="toggle">
          <input
            type="checkbox"
            id="online-only"
            checked={onlineOnly}
            onChange={(e) => (setOnlineOnly((e.target as HTMLInputElement).checked), setLimit(PAGE_ROWS))}
          />
          Online only
        </label>
        <span class="muted small count" aria-live="polite">
          {onlineCount} online · {total} total
          {waitingCount > 0 && ` · ${waitingCount} need${waitingCount === 1 ? "s" : ""} you`}
        </span>
      </div>
      {shown.length > 0
        ? (
          <>
            <ul class="session-list">
              {shown.map((s, i) => {
                const group = groupOf(s);
                const head = i === 0 || groupOf(shown[i - 1]) !== group;
                return [
                  head && (
                    <li key={`group-${group}`} class="group-head" data-group-head={group} aria-hidden="true">
                      {GROUP_LABEL[group]}
                    </li>
                  ),
                  <SessionRow key={s.id} s={s} now={now} />,
                ];
              })}
            </ul>
            {matches.length > shown.length && (
              <button
                type="button"
                class="ghost show-more"
                onClick={() => setLimit((n) => n + PAGE_ROWS)}
              >
                Show {Math.min(PAGE_ROWS, matches.length - shown.length)} more of{" "}
                {matches.length - shown.length}
              </button>
            )}
          </>
        )
        : (
          <div class="empty">
            {total === 0
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
      <ContentSearch query={query} names={titles} now={now} />
    </main>
  );
}
