/** `/notifications`: this browser's notification settings (any signed-in person). */
import type { Ctx } from "../lib/router.ts";
import { Island } from "../lib/render.tsx";
import { page } from "./_page.tsx";
import NotificationSettings from "../islands/NotificationSettings.tsx";
import { KIND_LABELS, NOTIFY_KINDS } from "../lib/notify/kinds.ts";

export const handler = {
  GET(ctx: Ctx): Response {
    return page(ctx, {}, () => ({
      title: "Notifications",
      bodyClass: "page-admin",
      body: (
        <Island
          name="NotificationSettings"
          component={NotificationSettings}
          props={{
            kinds: NOTIFY_KINDS.map((kind) => ({ kind, label: KIND_LABELS[kind] })),
            defaults: ["approval.requested", "run.settled", "run.failed", "spawn.failed"],
          }}
        />
      ),
    }));
  },
};
