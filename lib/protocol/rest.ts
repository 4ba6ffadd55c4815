/**
 * Transport 2 of the protocol: REST bodies, queries and answers, one module per resource beside this one.
 * This module gathers them (`lib/protocol.ts` re-exports it whole), so a route's schema is found by its
 * resource and importers keep one path; it holds only what every REST route shares.
 */
import { z } from "zod";

export * from "./rest_sessions.ts";
export * from "./rest_budgets.ts";
export * from "./rest_approvals.ts";
export * from "./rest_gitlab.ts";
export * from "./rest_spawn.ts";
export * from "./rest_merge_requests.ts";
export * from "./rest_access.ts";
export * from "./rest_notifications.ts";

/** Any JSON body: read first, checked against its schema after a size rule that depends on the content. */
export const JsonBody = z.unknown();
