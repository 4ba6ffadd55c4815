/**
 * Approvals behind one async interface: the daemon's SQLite file (`sqlite_approval_log.ts`, over the same
 * `approvals` table and SQL as lib/approval_store.ts) and PostgreSQL shared by several replicas
 * (`pg_approval_log.ts`). Both pass one contract (tests/process/approval_log_contract_test.ts).
 *
 * First answer wins, across replicas too: a decision is one conditional write (`… WHERE state = 'pending'`),
 * so of two replicas deciding at once exactly one changes the row, and the other is handed the row as the
 * winner left it, never a guess.
 *
 * Hints: every stored change tells the subscribers of every log on the same database which session's
 * approvals changed (their browsers show the pending list and each session's waiting count), after the
 * commit. The hint is fast and lossy (PostgreSQL NOTIFY, an in-process call on SQLite), so a sweep compares
 * the pending approvals every `APPROVAL_SWEEP_MS` with the previous look and hints the sessions whose pending
 * set differs. A change that leaves the pending set as it was (an answer marked applied, a request asked and
 * answered between two sweeps) is then not hinted again; nothing in the pending list depends on it.
 */
import type { ApprovalSource, ApprovalState } from "../protocol.ts";
import type { ApprovalRecord } from "../approval_store.ts";
import { Wakeups } from "./command_queue.ts";

export type { ApprovalRecord };

/** What a plugin's request stores: the approval as it starts, pending. */
export type ApprovalRequest = Pick<
  ApprovalRecord,
  "id" | "sessionId" | "toolCallId" | "toolName" | "args" | "createdAt" | "kind"
>;

/** The states a decision moves a pending approval to. */
export type FinalState = Exclude<ApprovalState, "pending">;

/** What a decision found. */
export interface Decided {
  /** True when this call's answer was stored; false when the approval was no longer pending. */
  won: boolean;
  /** The approval after the call: this call's answer when it won, the answer that did win otherwise. */
  approval: ApprovalRecord;
}

/** Called with a session whose approvals changed (possibly more than once, possibly late). */
export type ApprovalsHint = (sessionId: string) => void;

/** How often the sweep compares the pending approvals for changes a lost hint did not announce. */
export const APPROVAL_SWEEP_MS = 500;

/**
 * Every approval of every session.
 * @typeParam Also the writes that belong to a decision (a budget card's raise, see `ApprovalDeps.raiseBudget`
 *   in lib/approval_deps.ts), run inside the decision's transaction with that store's own handle: a crash
 *   keeps both or neither.
 */
export interface ApprovalLog<Also = never> {
  /** Which database holds it. */
  readonly kind: "sqlite" | "postgres";
  /** Store a new pending approval; false when one with this id exists (a re-sent request), left unchanged. */
  insert(request: ApprovalRequest): Promise<boolean>;
  /** One approval, or null. */
  get(id: string): Promise<ApprovalRecord | null>;
  /**
   * Move a pending approval to a final state, with `also` in the same transaction. When `also` throws,
   * nothing is stored and the error is passed on.
   * @throws {NotFoundError} for an unknown id.
   */
  decide(id: string, state: FinalState, by: string, reason: string | null, also?: Also): Promise<Decided>;
  /** Correct a decided approval to what the agent really applied (the terminal answered first). */
  overrule(id: string, state: FinalState, by: string): Promise<void>;
  /** Record that the plugin applied an answer; false when already recorded. */
  applied(id: string, source: ApprovalSource): Promise<boolean>;
  /** Every pending approval, oldest first. */
  pending(): Promise<ApprovalRecord[]>;
  /** Approvals filtered by session and state, oldest first (at most 10,000). */
  list(filter?: { sessionId?: string; state?: ApprovalState }): Promise<ApprovalRecord[]>;
  /** Remove a deleted session's approvals. */
  deleteSession(sessionId: string): Promise<void>;
  /**
   * Hear of sessions whose approvals changed: at once when a hint arrives, from the sweep otherwise.
   * @returns a function that stops this subscription.
   */
  subscribe(onChange: ApprovalsHint): () => void;
  /** Stop the sweep and the listener and release what the log opened; unusable afterwards. */
  close(): Promise<void>;
}

/**
 * The subscribers of one log with the sweep that stands in for lost hints: `pendingIds` reads the pending
 * approvals (id and session, in a stable order), and each sweep hints the sessions whose pending ids differ
 * from the previous sweep's. The first sweep compares with nothing, so it hints every session with a pending
 * approval: a subscriber cannot know what it missed before it listened.
 */
export function approvalWakeups(
  pendingIds: () => Promise<{ id: string; sessionId: string }[]>,
  everyMs: number,
): Wakeups {
  let previous = new Map<string, string>();
  return new Wakeups(async () => {
    const now = new Map<string, string>();
    for (const { id, sessionId } of await pendingIds()) {
      now.set(sessionId, (now.get(sessionId) ?? "") + id + "\n");
    }
    const changed = [...now].filter(([sessionId, ids]) => previous.get(sessionId) !== ids).map(([s]) => s);
    for (const sessionId of previous.keys()) if (!now.has(sessionId)) changed.push(sessionId);
    previous = now;
    return changed;
  }, everyMs);
}
