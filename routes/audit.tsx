/** `/audit`: the audit log for admins (sign-in form without credentials, 403 below admin, no rows either way). */
import type { Ctx } from "../lib/router.ts";
import { Island } from "../lib/render.tsx";
import { page } from "./_page.tsx";
import AuditLog from "../islands/AuditLog.tsx";

/** Rows per page of the audit page. */
const PAGE = 200;

export const handler = {
  GET(ctx: Ctx): Response {
    return page(ctx, { need: "audit", what: "The audit log" }, () => ({
      title: "Audit",
      bodyClass: "page-admin",
      body: (
        <Island
          name="AuditLog"
          component={AuditLog}
          props={{ rows: ctx.app.audit.page(0, PAGE), limit: PAGE }}
        />
      ),
    }));
  },
};
