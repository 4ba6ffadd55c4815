/**
 * An approval inline in the conversation: the tool and its arguments, Approve / Reject with an optional
 * reason while it waits (keys `a` / `r` while the card has focus), and once answered who decided, when, and
 * whether the agent got the answer.
 */
import { useState } from "preact/hooks";
import type { ApprovalDecision, ApprovalState } from "../lib/protocol.ts";
import type { ApprovalView } from "../ui/approval_view.ts";
import { useCan } from "../ui/roles.ts";
import { ApprovalArgs } from "./ApprovalArgs.tsx";

interface Props {
  approval: ApprovalView;
  /** Resolves to an error message, or null once the daemon stored the answer. */
  onDecide(id: string, decision: ApprovalDecision, reason?: string): Promise<string | null>;
}

const STATE_TEXT: Record<ApprovalState, string> = {
  pending: "Waiting for approval",
  approved: "Approved",
  rejected: "Rejected",
  cancelled: "Cancelled",
  expired: "Expired",
};

function clock(ms: number | null): string {
  return ms === null ? "" : new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

export function ApprovalCard({ approval: a, onDecide }: Props) {
  const [reason, setReason] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const pending = a.state === "pending";
  // A viewer sees the request but no buttons (the daemon would answer 403).
  const mayDecide = useCan("approve");

  async function decide(decision: ApprovalDecision) {
    if (busy || !pending || !mayDecide) return;
    setBusy(true);
    setError(await onDecide(a.id, decision, reason.trim() || undefined));
    setBusy(false);
  }

  function onKeyDown(e: KeyboardEvent) {
    // Typing a reason must not answer; `a` / `r` anywhere else on the focused card do.
    if ((e.target as HTMLElement).closest("input, textarea") || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "a" || e.key === "r") {
      e.preventDefault();
      e.stopPropagation();
      void decide(e.key === "a" ? "approve" : "reject");
    }
  }

  return (
    <section
      class={`approval approval-${a.state}`}
      id={`approval-${a.id}`}
      data-approval={a.id}
      data-state={a.state}
      tabIndex={0}
      aria-label={`${a.toolName}: ${STATE_TEXT[a.state]}`}
      onKeyDown={onKeyDown}
    >
      <header>
        <span class="tool-name">{a.kind === "budget" ? "Budget reached" : a.toolName}</span>
        <span class={`chip ${pending ? "awaiting" : a.state}`}>{STATE_TEXT[a.state]}</span>
      </header>
      {a.kind === "budget"
        // A budget card: approving raises the session's budget by its size, rejecting stops the run.
        ? (
          <p class="budget-card" data-budget-card>
            {String((a.args as { text?: unknown } | null)?.text ?? "")}
          </p>
        )
        : <ApprovalArgs toolName={a.toolName} args={a.args} />}
      {pending && !mayDecide && <p class="muted small approval-readonly">An operator can answer this.</p>}
      {pending
        ? mayDecide && (
          <div class="approval-actions">
            <input
              type="text"
              class="reason"
              aria-label="Reason (optional)"
              placeholder="Reason (optional)"
              maxLength={2000}
              value={reason}
              onInput={(e) => setReason((e.target as HTMLInputElement).value)}
            />
            <button
              type="button"
              class="primary approve"
              disabled={busy}
              onClick={() => void decide("approve")}
            >
              Approve <kbd>a</kbd>
            </button>
            <button type="button" class="danger reject" disabled={busy} onClick={() => void decide("reject")}>
              Reject <kbd>r</kbd>
            </button>
          </div>
        )
        : (
          <p class="approval-outcome small">
            {STATE_TEXT[a.state]}
            {/* The plugin names a terminal answer's decider "terminal": "by terminal in the terminal" says it twice. */}
            {a.decidedBy && !(a.source === "terminal" && a.decidedBy === "terminal") && (
              <>
                {" by "}
                <b class="decided-by">{a.decidedBy}</b>
              </>
            )}
            {a.source === "terminal" && (
              <>
                {" "}
                <span class="source-terminal">in the terminal</span>
              </>
            )}
            {a.decidedAt !== null && ` at ${clock(a.decidedAt)}`}
            {a.reason && `: “${a.reason}”`}
            {" · "}
            <span class={`delivery ${a.appliedAt !== null ? "delivered" : "undelivered"}`}>
              {a.appliedAt !== null ? "delivered to the agent" : "not yet delivered to the agent"}
            </span>
          </p>
        )}
      {error && <p class="error small" role="alert">{error}</p>}
    </section>
  );
}
