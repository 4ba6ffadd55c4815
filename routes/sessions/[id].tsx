/** `/sessions/:id`: one session's conversation, panels and composer (sign-in form without credentials). */
import type { Ctx } from "../../lib/router.ts";
import { Island, renderPage } from "../../lib/render.tsx";
import { signInPage } from "../../components/SignInPage.tsx";
import { TopBar } from "../../components/TopBar.tsx";
import SessionView from "../../islands/SessionView.tsx";
import { SESSION_ID_RE } from "../../lib/protocol.ts";
import { HISTORY_PAGE } from "../../lib/ui/conversation.ts";
import { asUiEvents } from "../../lib/ui/wire.ts";

function notFound(id: string): Response {
  return renderPage(
    <>
      <TopBar>
        <a href="/">Sessions</a>
      </TopBar>
      <main class="not-found">
        <h1>No such session</h1>
        <p>
          There is no session <code>{id}</code>. <a href="/">Back to all sessions</a>
        </p>
      </main>
    </>,
    { title: "Not found · lvmh", status: 404 },
  );
}

export const handler = {
  GET(ctx: Ctx): Response {
    if (!ctx.principal) return signInPage();
    const id = ctx.params.id;
    const session = SESSION_ID_RE.test(id) ? ctx.app.sessions.get(id) : null;
    if (!session) return notFound(id);
    // The latest page of history; older pages are fetched as the reader scrolls up.
    const stored = ctx.app.store.events(id, { after: 0, before: session.lastSeq + 1, limit: HISTORY_PAGE });
    const events = asUiEvents(stored);
    const hasOlder = events.length === HISTORY_PAGE && events[0].seq > 1;
    const title = session.name || id;
    return renderPage(
      <>
        <TopBar>
          <a href="/">Sessions</a>
          <span aria-hidden="true">/</span>
          <span class="title" title={title} aria-current="page">{title}</span>
        </TopBar>
        <Island
          name="SessionView"
          component={SessionView}
          props={{ session, events, hasOlder, now: Date.now() }}
        />
      </>,
      { title: `${title} · lvmh`, bodyClass: "page-session" },
    );
  },
};
