/** `/`: the sessions page (sign-in form without credentials). */
import type { Ctx } from "../lib/router.ts";
import { Island, optionalIsland, renderPage } from "../lib/render.tsx";
import { signInPage } from "../components/SignInPage.tsx";
import { TopBar } from "../components/TopBar.tsx";
import SessionList from "../islands/SessionList.tsx";

export const handler = {
  async GET(ctx: Ctx): Promise<Response> {
    if (!ctx.principal) return signInPage(ctx.url.searchParams.get("signin") === "failed");
    const sessions = ctx.app.store.listSessions();
    // The spawn panel (issue 5) lives in its own island file; the page shows it once that file exists.
    const SpawnPanel = await optionalIsland<Record<string, never>>("SpawnPanel");
    return renderPage(
      <>
        <TopBar>
          <span aria-current="page">Sessions</span>
        </TopBar>
        <div class={`sessions-layout ${SpawnPanel ? "with-spawn" : ""}`}>
          <Island name="SessionList" component={SessionList} props={{ sessions, now: Date.now() }} />
          {SpawnPanel && (
            <aside class="spawn-slot" aria-label="Start a session">
              <Island name="SpawnPanel" component={SpawnPanel} props={{}} />
            </aside>
          )}
        </div>
      </>,
      { title: "Sessions · lvmh", bodyClass: "page-sessions" },
    );
  },
};
