/**
 * Under the sessions list's filter: what the sessions said and did that matches the same text, grouped by
 * session, best first, with a link to every hit on the search page. Searches after a short pause in typing.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import type { SearchPage } from "../lib/protocol.ts";
import { SearchResults } from "./SearchResults.tsx";
import { searchEvents } from "../ui/rest.ts";

/** Pause after the last keystroke before searching. */
const DEBOUNCE_MS = 300;
/** Hits shown under the list; the search page has the rest. */
const SHOWN = 10;

export function ContentSearch(
  { query, names, now }: { query: string; names: Record<string, string>; now: number },
) {
  const [page, setPage] = useState<SearchPage | null>(null);
  const asked = useRef(0);
  const q = query.trim();

  useEffect(() => {
    const ticket = ++asked.current;
    if (q.length < 2) return setPage(null);
    const timer = setTimeout(() => {
      searchEvents({ q, limit: SHOWN })
        .then((p) => ticket === asked.current && setPage(p))
        .catch(() => ticket === asked.current && setPage(null));
    }, DEBOUNCE_MS);
    return () => clearTimeout(timer);
  }, [q]);

  if (!page || q.length < 2) return null;
  return (
    <section class="content-search" aria-label="In conversations" data-content-search>
      <h2 class="group-head">In conversations</h2>
      {page.hits.length
        ? <SearchResults hits={page.hits} names={names} now={now} />
        : <p class="muted small">No message, tool call or result matches.</p>}
      <a class="small" href={`/search?q=${encodeURIComponent(q)}`}>All results for “{q}” →</a>
    </section>
  );
}
