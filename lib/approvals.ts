/**
 * Tool approvals: the one owner of the approvals (kept by an `ApprovalLog`: the daemon's SQLite file, or
 * PostgreSQL shared by several replicas) and of the `approvals` frame. A plugin asks (`approval_request`), a
 * person answers over REST on any replica, the answer is stored first and delivered to the plugin when it is
 * (re)connected, and the plugin's `approval_resolved` marks it applied. First answer wins, across replicas too
 * (the log's decision is one conditional write); a stored answer is never lost by a restart of either side, nor
 * applied twice (the plugin resolves each approvalId once).
 *
 * What the session list and the browsers read synchronously (each session's waiting count, the `approvals`
 * frame) comes from a cache of the pending approvals: loaded at start, re-read for a session after each of
 * this owner's own writes, and after each of the log's hints (another replica's write, or the log's sweep).
 * Everything this owner does to one session's approvals runs in order, one after another, so a plugin's
 * request, its answer and a re-read of the cache never overtake each other.
 *
 * Its parts, which hold no approval: that order and the retries (lib/approval_steps.ts), what the plugin's
 * events mean to the log (lib/approval_events.ts), the cache's shape (lib/pending_approvals.ts) and what the
 * owner is handed (lib/approval_deps.ts).
 */
import type { ApprovalState, DecisionBody, ServerFrame } from "./protocol.ts";
import { ConflictError, NotFoundError } from "./errors.ts";
import type { ApprovalRecord, Decided, FinalState } from "./storage/approval_log.ts";
import type { AnyApprovalLog, ApprovalDeps, ApprovalsOptions } from "./approval_deps.ts";
import {
  decisionCommand,
  finalStateOf,
  type RequestEvent,
  requestOf,
  type ResolvedEvent,
  STATE_OF,
  terminalOverrules,
} from "./approval_events.ts";
import {
  changedSessions,
  oldestFirst,
  type PendingBySession,
  pendingBySession,
  sameIds,
} from "./pending_approvals.ts";
import { ApprovalSteps } from "./approval_steps.ts";

export type { ApprovalRecord };
export type { AnyApprovalLog, ApprovalDeps, ApprovalsOptions } from "./approval_deps.ts";

/** Pending and answered tool calls of every session. */
export class Approvals {
  /** The pending approvals per session, by id: what `waiting`, `pending` and `frame` read. */
  #pending: PendingBySession;
  /** Every pending approval, oldest first, until the next change. */
  #sorted: ApprovalRecord[] | null = null;
  /** Sessions with a re-read queued that has not started: one more hint adds nothing. */
  #rereads = new Set<string>();
  /** Each session's steps in order (after `start()`'s load), a plugin's refused steps tried again. */
  #steps = new ApprovalSteps();
  #unsubscribe: (() => void) | null = null;
  /** Whether the cache holds what the log held at start (`options.pending`, or `start()`'s load). */
  #loaded: boolean;

  #log: AnyApprovalLog;
  #deps: ApprovalDeps;

  /** Call `start()` to load the cache (unless `options.pending` gave it) and hear the log's hints. */
  constructor(log: AnyApprovalLog, deps: ApprovalDeps, options: ApprovalsOptions = {}) {
    this.#log = log;
    this.#deps = deps;
    this.#loaded = options.pending !== undefined;
    this.#pending = pendingBySession(options.pending ?? []);
  }

  /**
   * Hear the log's hints (another replica's writes, the log's sweep) and, unless the constructor was given the
   * pending approvals, load them.
   * @throws {Error} when the log cannot be read; the caller may call it again.
   */
  async start(): Promise<void> {
    this.#unsubscribe ??= this.#log.subscribe((sessionId) => this.#hinted(sessionId));
    if (this.#loaded) return;
    const load = this.#log.pending().then((records) => {
      const now = pendingBySession(records);
      const changed = changedSessions(this.#pending, now);
      this.#pending = now;
      this.#sorted = null;
      this.#loaded = true;
      for (const sessionId of changed) this.#deps.touch(sessionId);
      if (changed.length) this.#deps.broadcast(this.frame());
    });
    this.#steps.waitFor(load);
    await load;
  }

  /** Stop hearing hints and trying refused writes again; resolves when this owner's writes have finished. */
  async close(): Promise<void> {
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    await this.#steps.close();
  }

  /**
   * A plugin asks (or asks again after a reconnect). A new request is stored pending; a request that already
   * has an answer gets that answer at once. Resolves once it is handled (it never rejects: a refused write is
   * logged and tried again).
   */
  requested(event: RequestEvent): Promise<void> {
    return this.#steps.retried(event.sessionId, `request ${event.approvalId}`, async () => {
      const inserted = await this.#log.insert(requestOf(event));
      if (inserted) {
        await this.#reread(event.sessionId);
        this.#changed(event.sessionId);
        return;
      }
      const known = await this.#log.get(event.approvalId);
      if (known && known.sessionId === event.sessionId) this.#deliver(known);
    });
  }

  /**
   * The plugin applied an answer or stopped waiting (abort, timeout, an answer typed in the terminal).
   * Resolves once it is stored (it never rejects, as `requested`).
   */
  resolved(event: ResolvedEvent): Promise<void> {
    return this.#steps.retried(event.sessionId, `answer ${event.approvalId}`, async () => {
      const known = await this.#log.get(event.approvalId);
      if (!known || known.sessionId !== event.sessionId) return;
      /** An answer stored before this one, which the terminal's answer may have overtaken in pi. */
      let earlier: ApprovalRecord | null = known;
      if (known.state === "pending") {
        const state = finalStateOf(event);
        const budget = state === "approved" && known.kind === "budget";
        const decided = await this.#decide(known.id, state, event.by, null, budget ? known.sessionId : null);
        // Approved in pi's terminal: the plugin raised its own limit, the stored budget follows.
        if (decided.won && budget) this.#deps.budgetApproved?.(known.sessionId);
        // Lost: an answer given meanwhile (here or on another replica) was stored first.
        earlier = decided.won ? null : decided.approval;
      }
      if (terminalOverrules(earlier, event)) {
        // Both were answered at once and the terminal's answer reached pi first: the record says what ran.
        await this.#log.overrule(known.id, STATE_OF[event.decision], event.by);
      }
      await this.#log.applied(event.approvalId, event.source);
      await this.#reread(event.sessionId);
      this.#changed(event.sessionId);
    });
  }

  /**
   * A person answers, on this replica. The same answer again returns the same record; the other answer after
   * one is stored (on any replica) is refused.
   * @throws {NotFoundError} for an unknown id; {ConflictError} when it was answered otherwise or is no longer
   * waiting; the log's or the budget raise's error when the answer could not be stored (nothing is then).
   */
  async decide(id: string, body: DecisionBody, by = "admin"): Promise<ApprovalRecord> {
    const known = await this.#log.get(id);
    if (!known) throw new NotFoundError(`Approval "${id}" does not exist`);
    const wanted = STATE_OF[body.decision];
    const budget = wanted === "approved" && known.kind === "budget";
    const now = known.state !== "pending" ? known : await this.#steps.run(known.sessionId, async () => {
      const decided = await this.#decide(
        id,
        wanted,
        by,
        body.reason || null,
        budget ? known.sessionId : null,
      );
      if (!decided.won) return decided.approval;
      await this.#reread(known.sessionId);
      // The raised budget reaches the plugin before the answer, so the run does not stop again at once.
      if (budget) this.#deps.budgetApproved?.(known.sessionId);
      this.#deliver(decided.approval);
      this.#changed(known.sessionId);
      return decided.approval;
    });
    if (now.state === wanted) return now;
    throw new ConflictError(
      `Approval "${id}" is already ${now.state}${now.decidedBy ? ` by ${now.decidedBy}` : ""}`,
    );
  }

  /** A session ended (`bye`): nothing waits in it any more. Resolves once stored (never rejects). */
  sessionEnded(sessionId: string): Promise<void> {
    return this.#steps.retried(sessionId, "cancel at bye", async () => {
      const waiting = await this.#log.list({ sessionId, state: "pending" });
      for (const a of waiting) await this.#log.decide(a.id, "cancelled", "session ended", null);
      if (waiting.length || this.#pending.has(sessionId)) {
        await this.#reread(sessionId);
        this.#changed(sessionId);
      }
    });
  }

  /**
   * A plugin said hello with the approvals its pi process still waits for. A pending approval of the session
   * that is not among them belonged to a pi process that is gone (it died without `bye`, and this is a new one
   * on the same session): no answer can ever reach it, so it stops waiting for one. Resolves once stored
   * (never rejects).
   */
  helloWaiting(sessionId: string, waiting: readonly string[]): Promise<void> {
    const alive = new Set(waiting);
    return this.#steps.retried(sessionId, "cancel at hello", async () => {
      const orphans = (await this.#log.list({ sessionId, state: "pending" })).filter((a) => !alive.has(a.id));
      for (const a of orphans) await this.#log.decide(a.id, "cancelled", "pi restarted", null);
      if (orphans.length) {
        await this.#reread(sessionId);
        this.#changed(sessionId);
      }
    });
  }

  /** A session was deleted with its history. Resolves once stored (never rejects). */
  sessionDeleted(sessionId: string): Promise<void> {
    return this.#steps.retried(sessionId, "delete", async () => {
      await this.#log.deleteSession(sessionId);
      const had = this.#pending.delete(sessionId);
      this.#sorted = null;
      if (had) this.#deps.broadcast(this.frame());
    });
  }

  /** How many approvals of a session wait. */
  waiting(sessionId: string): number {
    return this.#pending.get(sessionId)?.size ?? 0;
  }

  /** The pending approvals (of one session, or all), oldest first, as this replica last heard of them. */
  pending(sessionId?: string): ApprovalRecord[] {
    return sessionId === undefined ? this.#all() : this.#all().filter((a) => a.sessionId === sessionId);
  }

  /** Approvals, oldest first, filtered by session and state, as the log holds them now. */
  list(filter: { sessionId?: string; state?: ApprovalState } = {}): Promise<ApprovalRecord[]> {
    return this.#log.list(filter);
  }

  /** The `approvals` frame: every pending approval. */
  frame(): ServerFrame {
    return { type: "approvals", pending: this.#all() };
  }

  /**
   * A decision with a budget card's raise (`raiseFor`) in its transaction. On SQLite the raise shares the
   * decision's transaction; on PostgreSQL it runs inside the decision's transaction too, as statements on it
   * (the shared budget limits, lib/budget_shared.ts): the decision and the raise commit together or not at all.
   */
  #decide(
    id: string,
    state: FinalState,
    by: string,
    reason: string | null,
    raiseFor: string | null,
  ): Promise<Decided> {
    const raise = this.#deps.raiseBudget;
    if (raiseFor === null || !raise) return this.#log.decide(id, state, by, reason);
    // Not async: on SQLite the raise's throw must reach the decision's transaction synchronously.
    const also = (handle: unknown): Promise<unknown> => Promise.resolve(raise(raiseFor, handle));
    return this.#log.decide(id, state, by, reason, also);
  }

  /** Send a stored answer to the session's plugin, if it is online (it asks again otherwise). */
  #deliver(a: ApprovalRecord): void {
    const command = decisionCommand(a);
    if (command) this.#deps.trySend(a.sessionId, command);
  }

  /** A hint: re-read the session's pending approvals, and tell when they changed. */
  #hinted(sessionId: string): void {
    if (this.#steps.closed || this.#rereads.has(sessionId)) return;
    this.#rereads.add(sessionId);
    this.#steps.run(sessionId, async () => {
      // A hint arriving from here on may be about a write this read does not see: it queues another.
      this.#rereads.delete(sessionId);
      if (await this.#reread(sessionId)) this.#changed(sessionId);
    }).catch((error) => {
      // The log's sweep hints again while the difference lasts.
      console.error(`lvmh: session ${sessionId}: approvals not re-read: ${(error as Error).message}`);
    });
  }

  /** Replace the cache of a session's pending approvals by what the log holds; whether it changed. */
  async #reread(sessionId: string): Promise<boolean> {
    const now = await this.#log.list({ sessionId, state: "pending" });
    const was = this.#pending.get(sessionId);
    if (sameIds(was, new Map(now.map((a) => [a.id, a])))) return false;
    if (now.length) this.#pending.set(sessionId, new Map(now.map((a) => [a.id, a])));
    else this.#pending.delete(sessionId);
    this.#sorted = null;
    return true;
  }

  #all(): ApprovalRecord[] {
    this.#sorted ??= oldestFirst(this.#pending);
    return this.#sorted;
  }

  #changed(sessionId: string): void {
    this.#deps.touch(sessionId);
    this.#deps.broadcast(this.frame());
  }
}
