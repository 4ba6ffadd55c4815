/** `/`: the sessions page (sign-in form without credentials). */
import type { Ctx } from "../lib/router.ts";
import { Island } from "../lib/render.tsx";
import { page } from "./_page.tsx";
import SessionList from "../islands/SessionList.tsx";
import SpawnPanel from "../islands/SpawnPanel.tsx";
import { PAGE_ROWS, sortByGroup } from "../ui/glance.ts";
import { can } from "../ui/roles.ts";

export const handler = {
  GET(ctx: Ctx): Response {
    const signInFailed = ctx.url.searchParams.get("signin") === "failed";
    return page(ctx, { signInFailed }, (me) => {
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
      return {
        title: "Sessions",
        home: true,
        bodyClass: "page-sessions",
        body: (
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
        ),
      };
    });
  },
};
