/** `/sessions/:id`: one session's conversation, panels and composer (sign-in form without credentials). */
import type { Ctx } from "../../lib/router.ts";
import { Island } from "../../lib/render.tsx";
import { type Page, page } from "../_page.tsx";
import SessionView from "../../islands/SessionView.tsx";
import { SESSION_ID_RE } from "../../lib/protocol.ts";
import { HISTORY_PAGE } from "../../ui/conversation.ts";
import { asUiEvents } from "../../ui/types.ts";
import { firstPrompt as firstPromptOf } from "../../ui/glance.ts";

function notFound(id: string): Page {
  return {
    title: "Not found",
    status: 404,
    crumb: null,
    body: (
      <main class="not-found">
        <h1>No such session</h1>
        <p>
          There is no session <code>{id}</code>. <a href="/">Back to all sessions</a>
        </p>
      </main>
    ),
  };
}

export const handler = {
  GET(ctx: Ctx): Response {
    return page(ctx, {}, (me) => {
      const id = ctx.params.id;
      const session = SESSION_ID_RE.test(id) ? ctx.app.sessions.get(id) : null;
      if (!session) return notFound(id);
      // `?at=SEQ` opens the conversation at that event: the page of history around it (the live catch-up
      // brings what follows).
      const atParam = Number(ctx.url.searchParams.get("at"));
      const at = Number.isInteger(atParam) && atParam > 0 && atParam <= session.lastSeq ? atParam : null;
      const end = at === null ? session.lastSeq : Math.min(session.lastSeq, at + HISTORY_PAGE / 2);
      // The latest page of history; older pages are fetched as the reader scrolls up.
      const stored = ctx.app.store.events(id, { after: 0, before: end + 1, limit: HISTORY_PAGE });
      const events = asUiEvents(stored);
      const hasOlder = events.length === HISTORY_PAGE && events[0].seq > 1;
      // The title falls back to the first prompt, which the latest page may not hold: read the first events.
      const head = events[0]?.seq === 1
        ? events
        : asUiEvents(ctx.app.store.events(id, { after: 0, limit: 24 }));
      const firstPrompt = firstPromptOf(head);
      const title = session.title;
      return {
        title,
        bodyClass: "page-session",
        crumb: <span class="title" title={title} aria-current="page">{title}</span>,
        body: (
          <Island
            name="SessionView"
            component={SessionView}
            props={{ session, events, hasOlder, now: Date.now(), me, firstPrompt, at }}
          />
        ),
      };
    });
  },
};
