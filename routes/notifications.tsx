/** `/notifications`: this browser's notification settings (any signed-in person). */
import type { Ctx } from "../lib/router.ts";
import { Island } from "../lib/render.tsx";
import { page } from "./_page.tsx";
import NotificationSettings from "../islands/NotificationSettings.tsx";
import { KIND_LABELS, NOTIFY_KINDS, type NotifyKind } from "../lib/notify/kinds.ts";

/** What a browser that opts in starts with: what needs a person, and the end of a run. */
const DEFAULT_KINDS: NotifyKind[] = ["approval.requested", "run.settled", "run.failed", "spawn.failed"];

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
            defaults: DEFAULT_KINDS,
          }}
        />
      ),
    }));
  },
};
