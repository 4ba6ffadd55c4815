/** `/`: the sessions page (sign-in form without credentials). */
import type { Ctx } from "../lib/router.ts";
import { Island, renderPage } from "../lib/render.tsx";
import { signInPage } from "../components/SignInPage.tsx";
import { TopBar } from "../components/TopBar.tsx";
import SessionList, { PAGE_ROWS } from "../islands/SessionList.tsx";
import SpawnPanel from "../islands/SpawnPanel.tsx";
import { sortByGroup } from "../ui/glance.ts";
import { can, type Me } from "../ui/roles.ts";

export const handler = {
  GET(ctx: Ctx): Response {
    if (!ctx.principal) return signInPage(ctx.url.searchParams.get("signin") === "failed");
    const me: Me = { name: ctx.principal.name, role: ctx.principal.role };
    // Each summary carries its title, activity and cost (the daemon keeps them): no event is read here.
    const all = sortByGroup(ctx.app.sessions.list());
    // Only the first page goes into the page (the live list brings the rest right after hydration), without
    // the model lists the list does not show: 3,000 full rows would be megabytes of props to send and parse.
    const sessions = all.slice(0, PAGE_ROWS).map(({ models: _models, ...s }) => s);
    const counts = {
      total: all.length,
      online: all.filter((s) => s.online).length,
      waiting: all.filter((s) => s.waiting > 0).length,
    };
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
            props={{ sessions, now: Date.now(), counts }}
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
