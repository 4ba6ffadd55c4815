/** `/`: the sessions page (sign-in form without credentials). */
import type { Ctx } from "../lib/router.ts";
import { Island, renderPage } from "../lib/render.tsx";
import { signInPage } from "../components/SignInPage.tsx";
import { TopBar } from "../components/TopBar.tsx";
import SessionList, { PAGE_ROWS } from "../islands/SessionList.tsx";
import SpawnPanel from "../islands/SpawnPanel.tsx";
import { sortByGroup } from "../lib/ui/glance.ts";
import { readGlances } from "../lib/ui/glance_read.ts";
import { can, type Me } from "../lib/ui/roles.ts";

export const handler = {
  GET(ctx: Ctx): Response {
    if (!ctx.principal) return signInPage(ctx.url.searchParams.get("signin") === "failed");
    const me: Me = { name: ctx.principal.name, role: ctx.principal.role };
    const sessions = ctx.app.sessions.list();
    // Glances for the rows the first render shows, in the order the list shows them.
    const glances = readGlances(
      (id, q) => ctx.app.store.events(id, q),
      sortByGroup([...sessions]),
      PAGE_ROWS,
    );
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
            props={{ sessions, now: Date.now(), glances }}
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
