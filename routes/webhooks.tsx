/** `/webhooks`: outbound webhooks and the GitLab hook secret, for admins (sign-in form, 403 below admin). */
import type { Ctx } from "../lib/router.ts";
import { Island, renderPage } from "../lib/render.tsx";
import { signInPage } from "../components/SignInPage.tsx";
import { adminOnlyPage } from "../components/AdminOnly.tsx";
import { TopBar } from "../components/TopBar.tsx";
import WebhookAdmin from "../islands/WebhookAdmin.tsx";
import { KIND_LABELS, NOTIFY_KINDS, type NotifyKind } from "../lib/notify/kinds.ts";

/** What a new endpoint is sent unless the admin picks otherwise: what needs a person. */
const DEFAULT_EVENTS: NotifyKind[] = ["approval.requested", "run.failed", "spawn.failed"];
import { can, type Me } from "../ui/roles.ts";

export const handler = {
  GET(ctx: Ctx): Response {
    if (!ctx.principal) return signInPage();
    const me: Me = { name: ctx.principal.name, role: ctx.principal.role };
    if (!can(me, "webhooks")) return adminOnlyPage(me, "Managing webhooks");
    const source = ctx.app.hooks.gitlabSecretSource();
    return renderPage(
      <>
        <TopBar me={me}>
          <a href="/">Sessions</a>
          <span aria-hidden="true">/</span>
          <span aria-current="page">Webhooks</span>
        </TopBar>
        <Island
          name="WebhookAdmin"
          component={WebhookAdmin}
          props={{
            endpoints: ctx.app.webhooks.list(),
            gitlab: { enabled: source !== null, source, path: "/hooks/gitlab" },
            kinds: NOTIFY_KINDS.map((kind) => ({ kind, label: KIND_LABELS[kind] })),
            defaults: DEFAULT_EVENTS,
          }}
        />
      </>,
      { title: "Webhooks · lvmh", bodyClass: "page-admin" },
    );
  },
};
