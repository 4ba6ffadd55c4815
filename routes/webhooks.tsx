/** `/webhooks`: outbound webhooks and the GitLab hook secret, for admins (sign-in form, 403 below admin). */
import type { Ctx } from "../lib/router.ts";
import { Island } from "../lib/render.tsx";
import { page } from "./_page.tsx";
import WebhookAdmin from "../islands/WebhookAdmin.tsx";
import { KIND_LABELS, NOTIFY_KINDS, type NotifyKind } from "../lib/notify/kinds.ts";

/** What a new endpoint is sent unless the admin picks otherwise: what needs a person. */
const DEFAULT_EVENTS: NotifyKind[] = ["approval.requested", "run.failed", "spawn.failed"];

export const handler = {
  async GET(ctx: Ctx): Promise<Response> {
    // Read before the page is drawn (it is drawn synchronously); shown only to those who may manage them.
    const endpoints = ctx.principal ? await ctx.app.webhooks.list() : [];
    return page(ctx, { need: "webhooks", what: "Managing webhooks" }, () => {
      const source = ctx.app.hooks.gitlabSecret.source();
      return {
        title: "Webhooks",
        bodyClass: "page-admin",
        body: (
          <Island
            name="WebhookAdmin"
            component={WebhookAdmin}
            props={{
              endpoints,
              gitlab: { enabled: source !== null, source, path: "/hooks/gitlab" },
              kinds: NOTIFY_KINDS.map((kind) => ({ kind, label: KIND_LABELS[kind] })),
              defaults: DEFAULT_EVENTS,
            }}
          />
        ),
      };
    });
  },
};
