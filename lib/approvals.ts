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
 */
import type { AgentEvent, ApprovalDecision, ApprovalState, DecisionBody, ServerFrame } from "./protocol.ts";
import type { Command } from "./sessions.ts";
import { ConflictError, NotFoundError } from "./errors.ts";
import type { ApprovalLog, ApprovalRecord, Decided, FinalState } from "./storage/approval_log.ts";
import type { SqliteDecisionWrites } from "./storage/sqlite_approval_log.ts";
import type { PgDecisionWrites } from "./storage/pg_approval_log.ts";

export type { ApprovalRecord };

/** What approvals need from the rest of the daemon. */
export interface ApprovalDeps {
  /** Send a command to a session's plugin if it is online; false otherwise. */
  trySend(sessionId: string, command: Command): boolean;
  /** A session's pending count changed. */
  touch(sessionId: string): void;
  /** Tell every browser. */
  broadcast(frame: ServerFrame): void;
  /**
   * A budget card is being approved: store the raise in the transaction that stores the decision (`handle`,
   * the log's own: on SQLite synchronous writes on the daemon's file, on PostgreSQL statements on the
   * decision's transaction, awaited). When it throws or rejects, the decision is not stored either.
   */
  raiseBudget?(sessionId: string, handle: unknown): void | Promise<unknown>;
  /** A budget card was approved (raise stored): tell the plugin, before it hears the answer. */
  budgetApproved?(sessionId: string): void;
}

/** The approval logs this owner works on: the daemon's SQLite file, or PostgreSQL. */
export type AnyApprovalLog = ApprovalLog<SqliteDecisionWrites> | ApprovalLog<PgDecisionWrites>;

export interface ApprovalsOptions {
  /**
   * What the log holds pending now, when the caller could read it synchronously (the daemon's SQLite file):
   * the cache starts from it, so nothing reads an empty list before `start()` has loaded one.
   */
  pending?: ApprovalRecord[];
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

/**
 * A plugin's write that the log refused (SQLite's file refusing writes, PostgreSQL away) is tried again after
 * these pauses, the session's later writes waiting behind it; past them it is given up (logged), and the
 * plugin asks again after its next reconnect.
 */
const RETRY_MS = [250, 500, 1_000, 2_000, 4_000, 8_000, 15_000, 30_000];

/** Pending and answered tool calls of every session. */
export class Approvals {
  /** The pending approvals per session, by id: what `waiting`, `pending` and `frame` read. */
  #pending = new Map<string, Map<string, ApprovalRecord>>();
  /** Every pending approval, oldest first, until the next change. */
  #sorted: ApprovalRecord[] | null = null;
  /** The last step queued for each session with work in flight (it never rejects). */
  #tails = new Map<string, Promise<void>>();
  /** Sessions with a re-read queued that has not started: one more hint adds nothing. */
  #rereads = new Set<string>();
  /** While `start()` loads the cache: every session's steps wait for it. */
  #loading: Promise<void> | null = null;
  #unsubscribe: (() => void) | null = null;
  #closed = false;
  /** Whether the cache holds what the log held at start (`options.pending`, or `start()`'s load). */
  #loaded: boolean;
  /** Ends the retry pauses at `close()`. */
  #wake = new Set<() => void>();

  #log: AnyApprovalLog;
  #deps: ApprovalDeps;

  /** Call `start()` to load the cache (unless `options.pending` gave it) and hear the log's hints. */
  constructor(log: AnyApprovalLog, deps: ApprovalDeps, options: ApprovalsOptions = {}) {
    this.#log = log;
    this.#deps = deps;
    this.#loaded = options.pending !== undefined;
    for (const a of options.pending ?? []) {
      let ids = this.#pending.get(a.sessionId);
      if (!ids) this.#pending.set(a.sessionId, ids = new Map());
      ids.set(a.id, a);
    }
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
      const now = new Map<string, Map<string, ApprovalRecord>>();
      for (const a of records) {
        let ids = now.get(a.sessionId);
        if (!ids) now.set(a.sessionId, ids = new Map());
        ids.set(a.id, a);
      }
      const changed = [...new Set([...this.#pending.keys(), ...now.keys()])]
        .filter((id) => !sameIds(this.#pending.get(id), now.get(id)));
      this.#pending = now;
      this.#sorted = null;
      this.#loaded = true;
      for (const sessionId of changed) this.#deps.touch(sessionId);
      if (changed.length) this.#deps.broadcast(this.frame());
    });
    const loading = load.then(() => {}, () => {});
    this.#loading = loading;
    void loading.then(() => {
      if (this.#loading === loading) this.#loading = null;
    });
    await load;
  }

  /** Stop hearing hints and trying refused writes again; resolves when this owner's writes have finished. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    for (const wake of this.#wake) wake();
    await Promise.all([...this.#tails.values()]);
  }

  /**
   * A plugin asks (or asks again after a reconnect). A new request is stored pending; a request that already
   * has an answer gets that answer at once. Resolves once it is handled (it never rejects: a refused write is
   * logged and tried again).
   */
  requested(event: RequestEvent): Promise<void> {
    return this.#pluginStep(event.sessionId, `request ${event.approvalId}`, async () => {
      const inserted = await this.#log.insert({
        id: event.approvalId,
        sessionId: event.sessionId,
        toolCallId: event.toolCallId,
        toolName: event.toolName,
        args: event.args,
        createdAt: Math.trunc(event.ts) || Date.now(),
        ...(event.kind === "budget" ? { kind: "budget" as const } : {}),
      });
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
    return this.#pluginStep(event.sessionId, `answer ${event.approvalId}`, async () => {
      const known = await this.#log.get(event.approvalId);
      if (!known || known.sessionId !== event.sessionId) return;
      /** An answer stored before this one, which the terminal's answer may have overtaken in pi. */
      let earlier: ApprovalRecord | null = known;
      if (known.state === "pending") {
        const state: FinalState = event.source === "abort"
          ? "cancelled"
          : event.source === "timeout"
          ? "expired"
          : STATE_OF[event.decision];
        const budget = state === "approved" && known.kind === "budget";
        const decided = await this.#decide(known.id, state, event.by, null, budget ? known.sessionId : null);
        // Approved in pi's terminal: the plugin raised its own limit, the stored budget follows.
        if (decided.won && budget) this.#deps.budgetApproved?.(known.sessionId);
        // Lost: an answer given meanwhile (here or on another replica) was stored first.
        earlier = decided.won ? null : decided.approval;
      }
      if (
        earlier && earlier.appliedAt === null && event.source === "terminal" &&
        earlier.state !== STATE_OF[event.decision]
      ) {
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
    const now = known.state !== "pending" ? known : await this.#step(known.sessionId, async () => {
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
    return this.#pluginStep(sessionId, "cancel at bye", async () => {
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
    return this.#pluginStep(sessionId, "cancel at hello", async () => {
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
    return this.#pluginStep(sessionId, "delete", async () => {
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

  /** A hint: re-read the session's pending approvals, and tell when they changed. */
  #hinted(sessionId: string): void {
    if (this.#closed || this.#rereads.has(sessionId)) return;
    this.#rereads.add(sessionId);
    this.#step(sessionId, async () => {
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

  /**
   * A plugin's step: when the log refuses it, logged and tried again (the session's later steps wait), given
   * up after `RETRY_MS`; the plugin asks again with `hello.waiting` after its next reconnect.
   */
  #pluginStep(sessionId: string, what: string, work: () => Promise<void>): Promise<void> {
    return this.#step(sessionId, async () => {
      for (let attempt = 0;; attempt++) {
        try {
          await work();
          if (attempt) {
            console.error(`lvmh: session ${sessionId}: approval ${what} stored after ${attempt} retries`);
          }
          return;
        } catch (error) {
          const pause = RETRY_MS[attempt];
          const message = (error as Error).message;
          if (this.#closed || pause === undefined) {
            console.error(`lvmh: session ${sessionId}: approval ${what} not stored, given up: ${message}`);
            return;
          }
          if (attempt === 0) {
            console.error(
              `lvmh: session ${sessionId}: approval ${what} not stored, trying again: ${message}`,
            );
          }
          await this.#pause(pause);
        }
      }
    });
  }

  /** Run `work` after every step queued before it for the session (and after `start()`'s load). */
  #step<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    const before = this.#tails.get(sessionId) ?? this.#loading;
    // With nothing before it, it starts now: on SQLite its first write is then made during this call.
    const run = before ? before.then(work) : work();
    const tail = run.then(() => {}, () => {});
    this.#tails.set(sessionId, tail);
    void tail.then(() => {
      if (this.#tails.get(sessionId) === tail) this.#tails.delete(sessionId);
    });
    return run;
  }

  #pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#wake.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#wake.add(done);
    });
  }

  #all(): ApprovalRecord[] {
    this.#sorted ??= [...this.#pending.values()].flatMap((ids) => [...ids.values()]).sort(oldestFirst);
    return this.#sorted;
  }

  #changed(sessionId: string): void {
    this.#deps.touch(sessionId);
    this.#deps.broadcast(this.frame());
  }
}

/** The logs' order: by creation time, then by id. */
function oldestFirst(a: ApprovalRecord, b: ApprovalRecord): number {
  return a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

function sameIds(a: Map<string, unknown> | undefined, b: Map<string, unknown> | undefined): boolean {
  if ((a?.size ?? 0) !== (b?.size ?? 0)) return false;
  for (const id of a?.keys() ?? []) if (!b!.has(id)) return false;
  return true;
}
