/** `/audit`: the audit log for admins (sign-in form without credentials, 403 below admin, no rows either way). */
import type { Ctx } from "../lib/router.ts";
import { Island } from "../lib/render.tsx";
import { page } from "./_page.tsx";
import AuditLog from "../islands/AuditLog.tsx";
import { can } from "../ui/roles.ts";

/** Rows per page of the audit page. */
const PAGE = 200;

export const handler = {
  async GET(ctx: Ctx): Promise<Response> {
    // Read only for someone the page shows rows to.
    const rows = ctx.principal && can(ctx.principal, "audit") ? await ctx.app.audit.page(0, PAGE) : [];
    return page(ctx, { need: "audit", what: "The audit log" }, () => ({
      title: "Audit",
      bodyClass: "page-admin",
      body: (
        <Island
          name="AuditLog"
          component={AuditLog}
          props={{ rows, limit: PAGE }}
        />
      ),
    }));
  },
};
