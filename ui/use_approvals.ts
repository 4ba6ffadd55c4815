/**
 * The session page's approvals: the daemon's records (`GET /api/sessions/:id/approvals`), refreshed whenever
 * this session's pending set in the page's live `approvals` frames changes or the conversation gains an
 * approval event, merged with those events into one view per approval; and answering one.
 */
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { Approval, ApprovalDecision } from "../lib/protocol.ts";
import { ApiError, errorText } from "./api.ts";
import { type ApprovalView, approvalView, sameView } from "./approval_view.ts";
import type { Conversation } from "./conversation.ts";
import { pageLive } from "./live.ts";
import { decideApproval, sessionApprovals } from "./rest.ts";

export interface ApprovalsState {
  /** Every approval of the session by id, oldest first. */
  views: ReadonlyMap<string, ApprovalView>;
  /** Answer one; resolves to an error message, or null once stored. */
  decide(id: string, decision: ApprovalDecision, reason?: string): Promise<string | null>;
}

/**
 * Follow one session's approvals.
 * @param conv the conversation, whose approval events say what was asked and applied
 */
export function useApprovals(sessionId: string, conv: Conversation): ApprovalsState {
  const [records, setRecords] = useState<ReadonlyMap<string, Approval>>(new Map());
  const [pendingKey, setPendingKey] = useState("");

  async function refresh() {
    try {
      const list = await sessionApprovals(sessionId);
      setRecords(new Map(list.map((a) => [a.id, a])));
    } catch {
      // A 401 raised the sign-in prompt (ui/api.ts); otherwise the next change of the pending set refreshes.
    }
  }

  useEffect(() => {
    const topic = pageLive().approvals;
    const update = (pending: Approval[] | null) => {
      const mine = (pending ?? []).filter((a) => a.sessionId === sessionId);
      // Pending rows are complete records: use them at once, then let the refresh fill in the decided ones.
      if (mine.length) setRecords((r) => new Map([...r, ...mine.map((a) => [a.id, a] as const)]));
      setPendingKey(mine.map((a) => a.id).join(","));
    };
    update(topic.get());
    return topic.subscribe(update);
  }, [sessionId]);

  // A change of what waits, or a new approval event (asked, applied): the records say who and when.
  const eventKey = conv.approvalOrder.map((id) => `${id}:${conv.approvals[id].resolved?.seq ?? 0}`).join(",");
  useEffect(() => void refresh(), [sessionId, pendingKey, eventKey]);

  // A view that shows what it showed before stays the same object, so only the cards that changed render.
  const previous = useRef<ReadonlyMap<string, ApprovalView>>(new Map());
  const views = useMemo(() => {
    const out = new Map<string, ApprovalView>();
    const ids = [...new Set([...conv.approvalOrder, ...records.keys()])];
    for (const id of ids) {
      const v = approvalView(sessionId, conv.approvals[id], records.get(id));
      const was = previous.current.get(id);
      if (v) out.set(id, was && sameView(was, v) ? was : v);
    }
    return previous.current = out;
  }, [conv.approvals, conv.approvalOrder, records]);

  async function decide(id: string, decision: ApprovalDecision, reason?: string): Promise<string | null> {
    try {
      const stored = await decideApproval(id, reason ? { decision, reason } : { decision });
      setRecords((r) => new Map(r).set(id, stored));
      return null;
    } catch (e) {
      // 409: someone else answered first; show what stands.
      if (e instanceof ApiError && e.status === 409) void refresh();
      return errorText(e);
    }
  }

  return { views, decide };
}
