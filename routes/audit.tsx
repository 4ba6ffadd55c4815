/** `/audit`: the audit log for admins (sign-in form without credentials, 403 below admin, no rows either way). */
import type { Ctx } from "../lib/router.ts";
import { Island, renderPage } from "../lib/render.tsx";
import { signInPage } from "../components/SignInPage.tsx";
import { adminOnlyPage } from "../components/AdminOnly.tsx";
import { TopBar } from "../components/TopBar.tsx";
import AuditLog from "../islands/AuditLog.tsx";
import { can, type Me } from "../ui/roles.ts";

/** Rows per page of the audit page. */
const PAGE = 200;

export const handler = {
  GET(ctx: Ctx): Response {
    if (!ctx.principal) return signInPage();
    const me: Me = { name: ctx.principal.name, role: ctx.principal.role };
    if (!can(me, "audit")) return adminOnlyPage(me, "The audit log");
    const rows = ctx.app.audit.page(0, PAGE);
    return renderPage(
      <>
        <TopBar me={me}>
          <a href="/">Sessions</a>
          <span aria-hidden="true">/</span>
          <span aria-current="page">Audit</span>
        </TopBar>
        <Island name="AuditLog" component={AuditLog} props={{ rows, limit: PAGE }} />
      </>,
      { title: "Audit · lvmh", bodyClass: "page-admin" },
    );
  },
};
