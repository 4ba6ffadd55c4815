/** `/`: the sessions page (sign-in form without credentials). */
import type { Ctx } from "../lib/router.ts";
import { Island, renderPage } from "../lib/render.tsx";
import { signInPage } from "../components/SignInPage.tsx";
import { TopBar } from "../components/TopBar.tsx";
import SessionList from "../islands/SessionList.tsx";
import SpawnPanel from "../islands/SpawnPanel.tsx";

export const handler = {
  GET(ctx: Ctx): Response {
    if (!ctx.principal) return signInPage(ctx.url.searchParams.get("signin") === "failed");
    const sessions = ctx.app.sessions.list();
    return renderPage(
      <>
        <TopBar>
          <span aria-current="page">Sessions</span>
        </TopBar>
        <div class="sessions-layout with-spawn">
          <Island name="SessionList" component={SessionList} props={{ sessions, now: Date.now() }} />
          <aside class="spawn-slot" aria-label="Start a session">
            <Island name="SpawnPanel" component={SpawnPanel} props={{}} />
          </aside>
        </div>
      </>,
      { title: "Sessions · lvmh", bodyClass: "page-sessions" },
    );
  },
};
