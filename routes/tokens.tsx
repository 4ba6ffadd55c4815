/** `/tokens`: named tokens for admins (sign-in form without credentials, 403 below admin). */
import type { Ctx } from "../lib/router.ts";
import { Island } from "../lib/render.tsx";
import { page } from "./_page.tsx";
import TokenAdmin from "../islands/TokenAdmin.tsx";

export const handler = {
  GET(ctx: Ctx): Response {
    return page(ctx, { need: "tokens", what: "Managing tokens" }, () => ({
      title: "Tokens",
      bodyClass: "page-admin",
      body: <Island name="TokenAdmin" component={TokenAdmin} props={{ tokens: ctx.app.tokens.list() }} />,
    }));
  },
};
