/**
 * The search page: a query box (words, "phrases", prefix*, -exclusions) and a kind filter over every
 * session's messages, tool calls and names; hits grouped by session, each opening its session at that event.
 * The server renders the first page (so a shared `/search?q=` link shows results at once); typing searches
 * again after a short pause, and "More results" follows the cursor.
 */
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { SearchPage } from "../lib/protocol.ts";
import { SearchResults } from "../components/SearchResults.tsx";
import { searchEvents } from "../ui/rest.ts";
import { useLive } from "../ui/use_live.ts";
import { EMPTY_DIRECTORY } from "../ui/session_directory.ts";

type Kind = "" | "message" | "prompt" | "tool";

interface Props {
  q: string;
  type: Kind;
  /** The first page for `q`, searched by the server. */
  page: SearchPage;
  /** Titles of the sessions in `page`. */
  names: Record<string, string>;
  now: number;
}

/** Pause after the last keystroke before searching. */
const DEBOUNCE_MS = 250;

export default function SearchPanel(props: Props) {
  const [q, setQ] = useState(props.q);
  const [type, setType] = useState<Kind>(props.type);
  const [page, setPage] = useState(props.page);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const dir = useLive((l) => l.sessions, EMPTY_DIRECTORY);
  const first = useRef(true);
  const asked = useRef(0);

  const names = useMemo(() => {
    const out = { ...props.names };
    for (const s of dir.byId.values()) out[s.id] = s.title;
    return out;
  }, [dir, props.names]);

  useEffect(() => {
    // The server already searched what the page opened with.
    if (first.current) {
      first.current = false;
      return;
    }
    const url = new URL(location.href);
    if (q.trim()) url.searchParams.set("q", q);
    else url.searchParams.delete("q");
    if (type) url.searchParams.set("type", type);
    else url.searchParams.delete("type");
    history.replaceState(null, "", url);
    if (!q.trim()) return setPage({ hits: [] });
    const ticket = ++asked.current;
    const timer = setTimeout(() => {
      setBusy(true);
      searchEvents({ q, type: type || undefined })
        .then((p) => ticket === asked.current && (setPage(p), setError(null)))
        .catch((e) => ticket === asked.current && setError((e as Error).message))
        .finally(() => ticket === asked.current && setBusy(false));
    }, DEBOUNCE_MS);
    return () => clearTimeout(timer);
  }, [q, type]);

  const more = () => {
    if (!page.next) return;
    const ticket = asked.current;
    setBusy(true);
    searchEvents({ q, type: type || undefined, before: page.next })
      .then((p) =>
        ticket === asked.current && setPage((old) => ({ hits: [...old.hits, ...p.hits], next: p.next }))
      )
      .catch((e) => setError((e as Error).message))
      .finally(() => setBusy(false));
  };

  return (
    <main class="search-page">
      <form class="filters" role="search" method="get" action="/search" onSubmit={(e) => e.preventDefault()}>
        <input
          type="search"
          id="search-q"
          name="q"
          aria-label="Search every session"
          placeholder='Search every session: words, "a phrase", deploy*, -exclude'
          value={q}
          onInput={(e) => setQ((e.target as HTMLInputElement).value)}
          autofocus
        />
        <select
          name="type"
          aria-label="What to search"
          value={type}
          onChange={(e) => setType((e.target as HTMLSelectElement).value as Kind)}
        >
          <option value="">everything</option>
          <option value="message">messages</option>
          <option value="prompt">prompts</option>
          <option value="tool">tool calls</option>
        </select>
        <span class="muted small count" aria-live="polite" data-search-count={page.hits.length}>
          {busy ? "searching…" : q.trim() ? `${page.hits.length}${page.next ? "+" : ""} hits` : ""}
        </span>
      </form>
      {error && <p class="error" role="alert">{error}</p>}
      {page.hits.length > 0
        ? <SearchResults hits={page.hits} names={names} now={props.now} />
        : q.trim() && !busy && <p class="empty">Nothing found.</p>}
      {page.next && (
        <button type="button" class="ghost show-more" onClick={more} disabled={busy}>More results</button>
      )}
    </main>
  );
}
