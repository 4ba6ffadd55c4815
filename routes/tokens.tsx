/** `/tokens`: named tokens for admins (sign-in form without credentials, 403 below admin). */
import type { Ctx } from "../lib/router.ts";
import { Island, renderPage } from "../lib/render.tsx";
import { signInPage } from "../components/SignInPage.tsx";
import { adminOnlyPage } from "../components/AdminOnly.tsx";
import { TopBar } from "../components/TopBar.tsx";
import TokenAdmin from "../islands/TokenAdmin.tsx";
import { can, type Me } from "../ui/roles.ts";

export const handler = {
  GET(ctx: Ctx): Response {
    if (!ctx.principal) return signInPage();
    const me: Me = { name: ctx.principal.name, role: ctx.principal.role };
    if (!can(me, "tokens")) return adminOnlyPage(me, "Managing tokens");
    return renderPage(
      <>
        <TopBar me={me}>
          <a href="/">Sessions</a>
          <span aria-hidden="true">/</span>
          <span aria-current="page">Tokens</span>
        </TopBar>
        <Island name="TokenAdmin" component={TokenAdmin} props={{ tokens: ctx.app.tokens.list() }} />
      </>,
      { title: "Tokens · lvmh", bodyClass: "page-admin" },
    );
  },
};
