/**
 * REST shapes of approvals (Transport 2): which tools ask a person (the session's policy), a person's decision,
 * and an approval as the routes and `approvals` frames report it.
 */
import { z } from "zod";
import { AskSet } from "./shapes.ts";
import { ApprovalDecision } from "./plugin.ts";

export const PolicyBody = z.object({ ask: AskSet });

export const DecisionBody = z.object({
  decision: ApprovalDecision,
  reason: z.string().trim().max(2000).optional(),
});
export type DecisionBody = z.infer<typeof DecisionBody>;
export const ApprovalState = z.enum(["pending", "approved", "rejected", "cancelled", "expired"]);
export type ApprovalState = z.infer<typeof ApprovalState>;
export const ApprovalsQuery = z.object({ state: ApprovalState.optional() });

/** One tool call waiting for (or answered by) a person, as the REST API and `approvals` frames report it. */
export interface Approval {
  id: string;
  sessionId: string;
  toolCallId: string;
  toolName: string;
  args: unknown;
  state: ApprovalState;
  createdAt: number;
  decidedBy: string | null;
  decidedAt: number | null;
  reason: string | null;
  /** When the plugin reported the answer applied (`approval_resolved`): "delivered to the agent". */
  appliedAt: number | null;
  /** `budget`: the session's budget was reached and approving raises it; absent for a tool call. */
  kind?: "budget";
}
