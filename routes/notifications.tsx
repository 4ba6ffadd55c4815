/** `/notifications`: this browser's notification settings (any signed-in person). */
import type { Ctx } from "../lib/router.ts";
import { Island, renderPage } from "../lib/render.tsx";
import { signInPage } from "../components/SignInPage.tsx";
import { TopBar } from "../components/TopBar.tsx";
import NotificationSettings from "../islands/NotificationSettings.tsx";
import { KIND_LABELS, NOTIFY_KINDS } from "../lib/notify/kinds.ts";
import type { Me } from "../ui/roles.ts";

export const handler = {
  GET(ctx: Ctx): Response {
    if (!ctx.principal) return signInPage();
    const me: Me = { name: ctx.principal.name, role: ctx.principal.role };
    const kinds = NOTIFY_KINDS.map((kind) => ({ kind, label: KIND_LABELS[kind] }));
    return renderPage(
      <>
        <TopBar me={me}>
          <a href="/">Sessions</a>
          <span aria-hidden="true">/</span>
          <span aria-current="page">Notifications</span>
        </TopBar>
        <Island
          name="NotificationSettings"
          component={NotificationSettings}
          props={{ kinds, defaults: ["approval.requested", "run.settled", "run.failed", "spawn.failed"] }}
        />
      </>,
      { title: "Notifications · lvmh", bodyClass: "page-admin" },
    );
  },
};
