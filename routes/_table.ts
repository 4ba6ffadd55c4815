/**
 * The route table: every path the daemon serves, its module and its auth policy. `auth_test.ts`
 * enumerates it, so a new route cannot skip authentication unnoticed.
 */
import type { RouteDef } from "../lib/router.ts";
import { handler as agentWs } from "./agent/ws.ts";
import { handler as browserWs } from "./ws.ts";
import { handler as sessions } from "./api/sessions/index.ts";
import { handler as sessionEvents } from "./api/sessions/[id]/events.ts";
import { handler as sessionPrompt } from "./api/sessions/[id]/prompt.ts";
import { handler as sessionAbort } from "./api/sessions/[id]/abort.ts";

export const routes: RouteDef[] = [
  { path: "/agent/ws", handler: agentWs, auth: "token" },
  { path: "/ws", handler: browserWs, auth: "token" },
  { path: "/api/sessions", handler: sessions, auth: "token" },
  { path: "/api/sessions/:id/events", handler: sessionEvents, auth: "token" },
  { path: "/api/sessions/:id/prompt", handler: sessionPrompt, auth: "token" },
  { path: "/api/sessions/:id/abort", handler: sessionAbort, auth: "token" },
];
