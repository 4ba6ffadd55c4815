/** `/search?q=&type=`: search every session (sign-in form without credentials); the first page rendered here. */
import type { Ctx } from "../lib/router.ts";
import { Island } from "../lib/render.tsx";
import { page } from "./_page.tsx";
import SearchPanel from "../islands/SearchPanel.tsx";
import { parseWith, type SearchPage, SearchQuery } from "../lib/protocol.ts";

export const handler = {
  GET(ctx: Ctx): Response {
    return page(ctx, {}, () => {
      const raw = Object.fromEntries(ctx.url.searchParams);
      const parsed = parseWith(SearchQuery, { q: raw.q ?? "", ...(raw.type ? { type: raw.type } : {}) });
      const q = parsed.ok ? parsed.value.q : "";
      const type = parsed.ok ? parsed.value.type ?? "" as const : "" as const;
      let found: SearchPage = { hits: [] };
      if (q.trim()) found = ctx.app.search.search({ q, type: type || undefined, limit: 20 });
      const names: Record<string, string> = {};
      for (const hit of found.hits) {
        names[hit.sessionId] ??= ctx.app.sessions.get(hit.sessionId)?.title ?? hit.sessionId;
      }
      return {
        title: "Search",
        bodyClass: "page-search",
        body: (
          <Island
            name="SearchPanel"
            component={SearchPanel}
            props={{ q, type, page: found, names, now: Date.now() }}
          />
        ),
      };
    });
  },
};
