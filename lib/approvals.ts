/**
 * Tool approvals: the one owner of the `approvals` rows and of the `approvals` frame. A plugin asks
 * (`approval_request`), a person answers over REST, the answer is stored first and delivered to the plugin when
 * it is (re)connected, and the plugin's `approval_resolved` marks it applied. First answer wins; a stored answer
 * is never lost by a restart of either side, nor applied twice (the plugin resolves each approvalId once).
 */
import type {
  AgentEvent,
  Approval,
  ApprovalDecision,
  ApprovalState,
  DecisionBody,
  ServerFrame,
} from "./protocol.ts";
import type { ApprovalRecord, ApprovalStore } from "./approval_store.ts";
import type { Command } from "./sessions.ts";
import { ConflictError, NotFoundError } from "./errors.ts";

/** What approvals need from the rest of the daemon. */
export interface ApprovalDeps {
  /** Send a command to a session's plugin if it is online; false otherwise. */
  trySend(sessionId: string, command: Command): boolean;
  /** A session's pending count changed. */
  touch(sessionId: string): void;
  /** Tell every browser. */
  broadcast(frame: ServerFrame): void;
  /** A budget card is being approved: store the raise, in the transaction that stores the decision. */
  raiseBudget?(sessionId: string): void;
  /** A budget card was approved (raise stored): tell the plugin, before it hears the answer. */
  budgetApproved?(sessionId: string): void;
}

/** What an approval request carries here: the protocol's `approval_request` event, as agent_conn passes it. */
type RequestEvent = Pick<
  Extract<AgentEvent, { type: "approval_request" }>,
  "sessionId" | "ts" | "approvalId" | "toolCallId" | "toolName" | "args" | "kind"
>;
/** The protocol's `approval_resolved` event, as far as the answer goes. */
type ResolvedEvent = Pick<
  Extract<AgentEvent, { type: "approval_resolved" }>,
  "sessionId" | "approvalId" | "decision" | "by" | "source"
>;

const STATE_OF: Record<ApprovalDecision, "approved" | "rejected"> = {
  approve: "approved",
  reject: "rejected",
};

/** Pending and answered tool calls of every session. */
export class Approvals {
  /** Pending approval ids per session, for the sessions list's `waiting` count. */
  #pending = new Map<string, Set<string>>();

  #store: ApprovalStore;
  #deps: ApprovalDeps;

  constructor(store: ApprovalStore, deps: ApprovalDeps) {
    this.#store = store;
    this.#deps = deps;
    for (const a of store.pending()) this.#track(a.sessionId, a.id, true);
  }

  /**
   * A plugin asks (or asks again after a reconnect). A new request is stored pending; a request that already
   * has an answer gets that answer at once.
   */
  requested(event: RequestEvent): void {
    const inserted = this.#store.insert({
      id: event.approvalId,
      sessionId: event.sessionId,
      toolCallId: event.toolCallId,
      toolName: event.toolName,
      args: event.args,
      createdAt: Math.trunc(event.ts) || Date.now(),
      ...(event.kind === "budget" ? { kind: "budget" as const } : {}),
    });
    if (inserted) {
      this.#track(event.sessionId, event.approvalId, true);
      this.#changed(event.sessionId);
      return;
    }
    const known = this.#store.get(event.approvalId);
    if (known && known.sessionId === event.sessionId) this.#deliver(known);
  }

  /** The plugin applied an answer or stopped waiting (abort, timeout, an answer typed in the terminal). */
  resolved(event: ResolvedEvent): void {
    const known = this.#store.get(event.approvalId);
    if (!known || known.sessionId !== event.sessionId) return;
    if (known.state === "pending") {
      const state: Exclude<ApprovalState, "pending"> = event.source === "abort"
        ? "cancelled"
        : event.source === "timeout"
        ? "expired"
        : STATE_OF[event.decision];
      const budget = state === "approved" && known.kind === "budget";
      this.#store.decide(known.id, state, event.by, null, budget ? this.#raise(known.sessionId) : undefined);
      this.#track(known.sessionId, known.id, false);
      // Approved in pi's terminal: the plugin raised its own limit, the stored budget follows.
      if (budget) this.#deps.budgetApproved?.(known.sessionId);
    } else if (
      known.appliedAt === null && event.source === "terminal" && known.state !== STATE_OF[event.decision]
    ) {
      // Both were answered at once and the terminal's answer reached pi first: the record says what ran.
      this.#store.overrule(known.id, STATE_OF[event.decision], event.by);
    }
    this.#store.applied(known.id, event.source);
    this.#changed(known.sessionId);
  }

  /**
   * A person answers. The same answer again returns the same record; the other answer after one is stored is
   * refused.
   * @throws {NotFoundError} for an unknown id; {ConflictError} when it was answered otherwise or is no longer
   * waiting.
   */
  decide(id: string, body: DecisionBody, by = "admin"): ApprovalRecord {
    const known = this.#store.get(id);
    if (!known) throw new NotFoundError(`Approval "${id}" does not exist`);
    const wanted = STATE_OF[body.decision];
    const budget = wanted === "approved" && known.kind === "budget";
    const raise = budget ? this.#raise(known.sessionId) : undefined;
    if (known.state === "pending" && this.#store.decide(id, wanted, by, body.reason || null, raise)) {
      this.#track(known.sessionId, id, false);
      // The raised budget reaches the plugin before the answer, so the run does not stop again at once.
      if (budget) this.#deps.budgetApproved?.(known.sessionId);
      const decided = this.#store.get(id)!;
      this.#deliver(decided);
      this.#changed(known.sessionId);
      return decided;
    }
    const now = this.#store.get(id)!;
    if (now.state === wanted) return now;
    throw new ConflictError(
      `Approval "${id}" is already ${now.state}${now.decidedBy ? ` by ${now.decidedBy}` : ""}`,
    );
  }

  /** A session ended (`bye`): nothing waits in it any more. */
  sessionEnded(sessionId: string): void {
    const ids = [...this.#pending.get(sessionId) ?? []];
    for (const id of ids) {
      this.#store.decide(id, "cancelled", "session ended", null);
      this.#track(sessionId, id, false);
    }
    if (ids.length) this.#changed(sessionId);
  }

  /**
   * A plugin said hello with the approvals its pi process still waits for. A pending approval of the session
   * that is not among them belonged to a pi process that is gone (it died without `bye`, and this is a new one
   * on the same session): no answer can ever reach it, so it stops waiting for one.
   */
  helloWaiting(sessionId: string, waiting: readonly string[]): void {
    const alive = new Set(waiting);
    const orphans = [...this.#pending.get(sessionId) ?? []].filter((id) => !alive.has(id));
    for (const id of orphans) {
      this.#store.decide(id, "cancelled", "pi restarted", null);
      this.#track(sessionId, id, false);
    }
    if (orphans.length) this.#changed(sessionId);
  }

  /** A session was deleted with its history. */
  sessionDeleted(sessionId: string): void {
    const had = this.#pending.delete(sessionId);
    this.#store.deleteSession(sessionId);
    if (had) this.#deps.broadcast(this.frame());
  }

  /** How many approvals of a session wait. */
  waiting(sessionId: string): number {
    return this.#pending.get(sessionId)?.size ?? 0;
  }

  /** Approvals, oldest first, filtered by session and state. */
  list(filter: { sessionId?: string; state?: ApprovalState } = {}): Approval[] {
    return filter.state === "pending" && filter.sessionId === undefined
      ? this.#store.pending()
      : this.#store.list(filter);
  }

  /** The `approvals` frame: every pending approval. */
  frame(): ServerFrame {
    return { type: "approvals", pending: this.#store.pending() };
  }

  /** A budget card's raise, written with its decision (one transaction: a crash keeps both or neither). */
  #raise(sessionId: string): (() => void) | undefined {
    const raise = this.#deps.raiseBudget;
    return raise ? () => raise(sessionId) : undefined;
  }

  #deliver(a: ApprovalRecord): void {
    if (a.state !== "approved" && a.state !== "rejected") return;
    this.#deps.trySend(a.sessionId, {
      type: "approval_decision",
      approvalId: a.id,
      decision: a.state === "approved" ? "approve" : "reject",
      ...(a.reason ? { reason: a.reason } : {}),
      by: a.decidedBy ?? "unknown",
    });
  }

  #track(sessionId: string, id: string, pending: boolean): void {
    let set = this.#pending.get(sessionId);
    if (pending) {
      if (!set) this.#pending.set(sessionId, set = new Set());
      set.add(id);
    } else if (set) {
      set.delete(id);
      if (set.size === 0) this.#pending.delete(sessionId);
    }
  }

  #changed(sessionId: string): void {
    this.#deps.touch(sessionId);
    this.#deps.broadcast(this.frame());
  }
}
