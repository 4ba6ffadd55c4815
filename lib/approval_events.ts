/**
 * What a plugin's approval events mean to the approval log, and the command that carries a stored answer back
 * to the plugin. Pure translation for lib/approvals.ts, the owner, which alone reads and writes the log and
 * sends; apart from it so that the owner reads as the order of its steps, not the shapes they move.
 */
import type { AgentEvent, ApprovalDecision } from "./protocol.ts";
import type { Command } from "./session_commands.ts";
import type { ApprovalRecord, ApprovalRequest, FinalState } from "./storage/approval_log.ts";

/** What an approval request carries here: the protocol's `approval_request` event, as agent_conn passes it. */
export type RequestEvent = Pick<
  Extract<AgentEvent, { type: "approval_request" }>,
  "sessionId" | "ts" | "approvalId" | "toolCallId" | "toolName" | "args" | "kind"
>;
/** The protocol's `approval_resolved` event, as far as the answer goes. */
export type ResolvedEvent = Pick<
  Extract<AgentEvent, { type: "approval_resolved" }>,
  "sessionId" | "approvalId" | "decision" | "by" | "source"
>;

/** The state an answer stores. */
export const STATE_OF: Record<ApprovalDecision, "approved" | "rejected"> = {
  approve: "approved",
  reject: "rejected",
};

/** The pending approval a plugin's request stores (created now when the event's time is missing). */
export function requestOf(event: RequestEvent): ApprovalRequest {
  return {
    id: event.approvalId,
    sessionId: event.sessionId,
    toolCallId: event.toolCallId,
    toolName: event.toolName,
    args: event.args,
    createdAt: Math.trunc(event.ts) || Date.now(),
    ...(event.kind === "budget" ? { kind: "budget" as const } : {}),
  };
}

/** The state a plugin's `approval_resolved` moves a still pending approval to. */
export function finalStateOf(event: ResolvedEvent): FinalState {
  return event.source === "abort"
    ? "cancelled"
    : event.source === "timeout"
    ? "expired"
    : STATE_OF[event.decision];
}

/**
 * Whether the terminal's answer reached pi before `earlier`, an answer stored but not yet applied that says
 * otherwise: both were given at once, and the record must say what ran.
 */
export function terminalOverrules(earlier: ApprovalRecord | null, event: ResolvedEvent): boolean {
  return earlier !== null && earlier.appliedAt === null && event.source === "terminal" &&
    earlier.state !== STATE_OF[event.decision];
}

/** The `approval_decision` command that tells the plugin a stored answer, or null while there is none. */
export function decisionCommand(a: ApprovalRecord): Command | null {
  if (a.state !== "approved" && a.state !== "rejected") return null;
  return {
    type: "approval_decision",
    approvalId: a.id,
    decision: a.state === "approved" ? "approve" : "reject",
    ...(a.reason ? { reason: a.reason } : {}),
    by: a.decidedBy ?? "unknown",
  };
}
