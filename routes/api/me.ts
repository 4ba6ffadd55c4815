import { json } from "../../lib/http.ts";
import type { Handlers } from "../../lib/router.ts";

/** Who is signed in: the token's name and role (the UI hides what the role may not do). */
export const handler: Handlers = {
  GET: (ctx) => json({ name: ctx.principal!.name, role: ctx.principal!.role }),
};
