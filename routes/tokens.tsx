/** `/tokens`: named tokens for admins (sign-in form without credentials, 403 below admin). */
import type { Ctx } from "../lib/router.ts";
import { Island } from "../lib/render.tsx";
import { page } from "./_page.tsx";
import TokenAdmin from "../islands/TokenAdmin.tsx";
import { can } from "../ui/roles.ts";

export const handler = {
  async GET(ctx: Ctx): Promise<Response> {
    // Read only for someone the page shows them to.
    const tokens = ctx.principal && can(ctx.principal, "tokens") ? await ctx.app.tokens.list() : [];
    return page(ctx, { need: "tokens", what: "Managing tokens" }, () => ({
      title: "Tokens",
      bodyClass: "page-admin",
      body: <Island name="TokenAdmin" component={TokenAdmin} props={{ tokens }} />,
    }));
  },
};
