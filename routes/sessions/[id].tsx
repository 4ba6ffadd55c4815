/** `/sessions/:id`: one session's conversation, panels and composer (sign-in form without credentials). */
import type { Ctx } from "../../lib/router.ts";
import { Island, renderPage } from "../../lib/render.tsx";
import { signInPage } from "../../components/SignInPage.tsx";
import { TopBar } from "../../components/TopBar.tsx";
import SessionView from "../../islands/SessionView.tsx";
import { SESSION_ID_RE } from "../../lib/protocol.ts";
import { HISTORY_PAGE } from "../../ui/conversation.ts";
import { asUiEvents } from "../../ui/types.ts";
import { firstPrompt as firstPromptOf } from "../../ui/glance.ts";
import type { Me } from "../../ui/roles.ts";

function notFound(id: string, me: Me): Response {
  return renderPage(
    <>
      <TopBar me={me}>
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
    const me: Me = { name: ctx.principal.name, role: ctx.principal.role };
    const id = ctx.params.id;
    const session = SESSION_ID_RE.test(id) ? ctx.app.sessions.get(id) : null;
    if (!session) return notFound(id, me);
    // The latest page of history; older pages are fetched as the reader scrolls up.
    const stored = ctx.app.store.events(id, { after: 0, before: session.lastSeq + 1, limit: HISTORY_PAGE });
    const events = asUiEvents(stored);
    const hasOlder = events.length === HISTORY_PAGE && events[0].seq > 1;
    // The title falls back to the first prompt, which the latest page may not hold: read the first events.
    const head = events[0]?.seq === 1
      ? events
      : asUiEvents(ctx.app.store.events(id, { after: 0, limit: 24 }));
    const firstPrompt = firstPromptOf(head);
    const title = session.title;
    return renderPage(
      <>
        <TopBar me={me}>
          <a href="/">Sessions</a>
          <span aria-hidden="true">/</span>
          <span class="title" title={title} aria-current="page">{title}</span>
        </TopBar>
        <Island
          name="SessionView"
          component={SessionView}
          props={{ session, events, hasOlder, now: Date.now(), me, firstPrompt }}
        />
      </>,
      { title: `${title} · lvmh`, bodyClass: "page-session" },
    );
  },
};
