/**
 * Search hits grouped by session (sessions in the order of their best hit), each hit a link that opens its
 * session at that event. Snippets are text: the matches between `«` and `»` become `<mark>` elements.
 */
import type { SearchHit } from "../lib/protocol.ts";
import { relativeTime } from "../ui/format.ts";
import { hitHref, snippetParts } from "../ui/snippet.ts";

const KIND_LABEL: Record<SearchHit["type"], string> = {
  prompt: "prompt",
  message: "answer",
  tool: "tool",
  session: "session",
};

/** A snippet with its matches marked, as text nodes and `<mark>` elements only. */
export function Snippet({ text }: { text: string }) {
  return (
    <span class="snippet">
      {snippetParts(text).map((p, i) => p.mark ? <mark key={i}>{p.text}</mark> : p.text)}
    </span>
  );
}

/** Hits in rank order, grouped by session; `names` gives each session's title when known. */
export function SearchResults(
  { hits, names, now }: { hits: SearchHit[]; names: Record<string, string>; now: number },
) {
  const groups = new Map<string, SearchHit[]>();
  for (const hit of hits) {
    const group = groups.get(hit.sessionId);
    if (group) group.push(hit);
    else groups.set(hit.sessionId, [hit]);
  }
  return (
    <div class="search-results">
      {[...groups].map(([sessionId, group]) => (
        <section class="search-group" key={sessionId} data-search-session={sessionId}>
          <h3>
            <a href={hitHref(sessionId, 0)}>{names[sessionId] ?? sessionId}</a>{" "}
            <span class="muted small">{group.length} hit{group.length === 1 ? "" : "s"}</span>
          </h3>
          <ul>
            {group.map((hit) => (
              <li key={`${hit.seq}-${hit.type}`} class={`search-hit kind-${hit.type}`}>
                <a href={hitHref(hit.sessionId, hit.seq)} data-hit-seq={hit.seq}>
                  <span class="chip">{hit.toolName ?? KIND_LABEL[hit.type]}</span>
                  <Snippet text={hit.snippet} />
                  <span class="muted small when">{hit.seq > 0 ? relativeTime(hit.ts, now) : ""}</span>
                </a>
              </li>
            ))}
          </ul>
        </section>
      ))}
    </div>
  );
}
