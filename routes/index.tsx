/** `/`: the sessions page (sign-in form without credentials). */
import type { Ctx } from "../lib/router.ts";
import { Island, renderPage } from "../lib/render.tsx";
import { signInPage } from "../components/SignInPage.tsx";
import { TopBar } from "../components/TopBar.tsx";
import SessionList from "../islands/SessionList.tsx";
import SpawnPanel from "../islands/SpawnPanel.tsx";
import { can, type Me } from "../lib/ui/roles.ts";

export const handler = {
  GET(ctx: Ctx): Response {
    if (!ctx.principal) return signInPage(ctx.url.searchParams.get("signin") === "failed");
    const me: Me = { name: ctx.principal.name, role: ctx.principal.role };
    // Each summary carries its title, activity and cost (the daemon keeps them): no event is read here.
    const sessions = ctx.app.sessions.list();
    const spawn = can(me, "spawn");
    return renderPage(
      <>
        <TopBar me={me}>
          <span aria-current="page">Sessions</span>
        </TopBar>
        <div class={`sessions-layout ${spawn ? "with-spawn" : ""}`}>
          <Island
            name="SessionList"
            component={SessionList}
            props={{ sessions, now: Date.now() }}
          />
          {spawn && (
            <aside class="spawn-slot" aria-label="Start a session">
              <Island name="SpawnPanel" component={SpawnPanel} props={{ me }} />
            </aside>
          )}
        </div>
      </>,
      { title: "Sessions · lvmh", bodyClass: "page-sessions" },
    );
  },
};
