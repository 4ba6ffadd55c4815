/** `/sessions/:id`: one session's conversation, panels and composer (sign-in form without credentials). */
import type { Ctx } from "../../lib/router.ts";
import { Island, renderPage } from "../../lib/render.tsx";
import { signInPage } from "../../components/SignInPage.tsx";
import { TopBar } from "../../components/TopBar.tsx";
import SessionView from "../../islands/SessionView.tsx";
import { SESSION_ID_RE } from "../../lib/protocol.ts";

/** Persisted events rendered on first load; older ones are fetched as the user scrolls up. */
export const INITIAL_EVENTS = 300;

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
    const session = SESSION_ID_RE.test(id) ? ctx.app.store.getSession(id) : null;
    if (!session) return notFound(id);
    const events = ctx.app.store.events(id, { after: 0, before: session.lastSeq + 1, limit: INITIAL_EVENTS });
    const hasOlder = events.length === INITIAL_EVENTS && events[0].seq > 1;
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
