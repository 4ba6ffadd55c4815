/**
 * Kept hook prompts with several replicas on one PostgreSQL database: every prompt is kept in the shared
 * `HookPromptLog` (lib/storage/pg_hook_prompt_log.ts), not in a replica's file, and worked on (spawned, waited
 * for, sent, tried again) by one replica at a time under a lease. The replica that took the hook claims its
 * prompt at once; each replica, at start and every lease period, claims what nobody holds, so a prompt whose
 * replica was SIGKILLed (or lost its data dir) is taken on by another once the lease ran out. The lease is
 * renewed while its replica works; a replica whose lease was taken over learns it at its next write (refused)
 * or renewal, and stops: it neither sends the prompt again nor records its failure.
 *
 * The claimant is often not the session's holder: it sends through the command queue (`Sessions.prompt`),
 * hears the answer in its copy of the log, and reads what the holder's plugin supports (`prompt_once`) from
 * the shared session row, which the holder writes after its welcome. A new socket of the session (a hello
 * here, or a new holder epoch on the row, seen at each renewal) means an unanswered prompt goes again, as on a
 * single daemon (the plugin takes a promptId once). The rules of a single daemon hold otherwise
 * (kept_prompts.ts): the log is read before each send, refusals are tried again within `RefusalRetry`,
 * follow-ups wait for the session to be idle, a prompt older than `PROMPT_KEEP_MS` is dropped.
 */
import { UnavailableError } from "../errors.ts";
import type { HookPromptLog, PendingPrompt, PromptLease } from "../storage/hook_prompt_log.ts";
import { HookStore } from "./hook_store.ts";
import {
  deliverWhenReady,
  type KeptPromptDeps,
  ONLINE_WAIT_MS,
  PROMPT_KEEP_MS,
  REFUSAL_RETRY,
  type RefusalRetry,
  spawnPrompt,
} from "./kept_prompts.ts";
import { pause } from "./session_waits.ts";
import { type PluginRows, SharedDelivery, type Work } from "./shared_delivery.ts";

export type { PluginRows };

/** Prompts one sweep claims at most (the next sweep takes the rest). */
const SWEEP_MAX = 100;

/** The kept prompts of one replica. */
export class SharedKeptPrompts {
  #deps: KeptPromptDeps;
  #log: HookPromptLog;
  #rows: PluginRows;
  #owner: string;
  #leaseMs: number;
  #later: (what: string, work: () => Promise<void>) => void;
  #stop = new AbortController();
  #working = new Map<string, Work>();
  /** Each try of a claimed prompt. */
  #delivery: SharedDelivery;
  #sweeper: ReturnType<typeof setInterval> | undefined;
  /** How long a hook's spawn waits before it tries an unreachable engine again (tests shorten it). */
  spawnRetryMs = 5000;
  /** How a refused prompt is tried again (tests shorten it). */
  retry: RefusalRetry = REFUSAL_RETRY;

  /**
   * @param owner this replica's id, named on its leases
   * @param later runs work after the caller's response went out, logging what it throws
   */
  constructor(
    deps: KeptPromptDeps,
    log: HookPromptLog,
    rows: PluginRows,
    owner: string,
    leaseMs: number,
    later: (what: string, work: () => Promise<void>) => void,
  ) {
    this.#deps = deps;
    this.#log = log;
    this.#rows = rows;
    this.#owner = owner;
    this.#leaseMs = leaseMs;
    this.#later = later;
    this.#delivery = new SharedDelivery(deps, log, rows);
  }

  /**
   * Take on the kept prompts (once the replica follows the shared log): the ones a single daemon or an earlier
   * version left in this file go to the shared log first; then a sweep now and every lease period.
   */
  start(): void {
    const file = new HookStore(this.#deps.store.db);
    const left = file.prompts();
    this.#later("taking on hook prompts", async () => {
      // Kept again under the same id: a kill between the two writes leaves both, and the next start repeats.
      for (const p of left) {
        await this.#log.keep(p);
        file.takePrompt(p.id);
      }
      await this.#deps.spawner.recovered();
      if (this.#stop.signal.aborted) return;
      await this.#sweep();
      this.#sweeper = setInterval(
        () => this.#later("claiming hook prompts", () => this.#sweep()),
        this.#leaseMs,
      );
    });
  }

  /** A plugin said hello here: see `SharedDelivery.pluginHello`. */
  pluginHello(sessionId: string, features: unknown): void {
    const written = this.#delivery.pluginHello(sessionId, features);
    this.#later(`features of session ${sessionId}`, () => written);
  }

  /** Spawn a session and prompt it once online; the prompt is in the shared log before this resolves. */
  async queueSpawn(
    repo: string,
    branch: string | undefined,
    message: string,
    actor: string,
    detail: Record<string, unknown> = {},
    dedupe?: { source: string; key: string },
  ): Promise<{ sessionId: string; duplicate: boolean }> {
    const pending = spawnPrompt(this.#deps.config, repo, branch, message, actor, detail);
    if (dedupe) {
      const claimed = await this.#log.keepSpawn(dedupe.source, dedupe.key, pending);
      if (claimed.duplicate) return claimed;
    } else {
      await this.#log.keep(pending);
    }
    this.#deps.audit.append({
      actor,
      role: null,
      action: "hook.spawn",
      sessionId: pending.sessionId,
      detail: { repo, branch: branch ?? null },
    });
    this.#later(`hook spawn on ${repo}`, () => this.#take(pending.id));
    return { sessionId: pending.sessionId, duplicate: false };
  }

  /** Keep a follow-up for a known session, sent once it is online and idle. @returns the prompt's id */
  async queueFollowUp(
    sessionId: string,
    message: string,
    actor: string,
    detail: Record<string, unknown> = {},
  ): Promise<string> {
    const pending = followUpPrompt(sessionId, message, actor, detail);
    await this.#log.keep(pending);
    this.takeOn(pending);
    return pending.id;
  }

  /** Work on a follow-up kept by a caller's committed transaction (`followUpPrompt`), as `queueFollowUp` does. */
  takeOn(pending: PendingPrompt): void {
    this.#later(`hook follow-up for session ${pending.sessionId}`, () => this.#take(pending.id));
  }

  /** Stop (shutdown): the prompts worked on here are released for the other replicas. @returns how many */
  async close(): Promise<number> {
    this.#stop.abort();
    clearInterval(this.#sweeper);
    const held = [...this.#working.values()];
    await Promise.allSettled(held.map((w) => this.#log.release(w.lease)));
    return held.length;
  }

  /** Claim every prompt nobody holds and work on each. */
  async #sweep(): Promise<void> {
    for (let n = 0; n < SWEEP_MAX && !this.#stop.signal.aborted; n++) {
      const claimed = await this.#log.claim(this.#owner, this.#leaseMs);
      if (!claimed) return;
      this.#later(`hook prompt for session ${claimed.prompt.sessionId}`, () => this.#work(claimed, false));
    }
  }

  /** Claim one prompt just kept here (a sweep elsewhere may have been quicker: then it is theirs). */
  async #take(id: string): Promise<void> {
    if (this.#stop.signal.aborted) return;
    const claimed = await this.#log.claim(this.#owner, this.#leaseMs, { id });
    if (claimed) await this.#work(claimed, true);
  }

  /**
   * Work on a claimed prompt while the lease holds, renewing it.
   * @param fresh claimed by the replica that just kept it (not taken on from another, or from before a start)
   */
  async #work(
    { prompt: p, lease }: { prompt: PendingPrompt; lease: PromptLease },
    fresh: boolean,
  ): Promise<void> {
    const work: Work = { lease, lost: new AbortController(), onEpoch: null };
    const stopped = () => work.lost.abort();
    this.#stop.signal.addEventListener("abort", stopped);
    this.#working.set(p.id, work);
    const renewer = setInterval(async () => {
      try {
        if (!await this.#log.renew(lease, this.#leaseMs)) return work.lost.abort();
        if (work.onEpoch) {
          const row = await this.#rows.features(p.sessionId);
          if (row) work.onEpoch?.(row.epoch);
        }
      } catch {
        // The database is away: the next renewal tries again; a lease that ran out meanwhile is refused then.
      }
    }, this.#leaseMs / 3);
    try {
      await this.#carry(p, work, fresh);
    } finally {
      clearInterval(renewer);
      this.#stop.signal.removeEventListener("abort", stopped);
      this.#working.delete(p.id);
    }
  }

  /** Spawn when still needed, wait for the session, then hand the prompt over exactly once. */
  async #carry(p: PendingPrompt, work: Work, fresh: boolean): Promise<void> {
    const { lease, lost } = work;
    if (Date.now() - p.createdAt > PROMPT_KEEP_MS) {
      if (await this.#log.take(p.id)) {
        console.warn(`lvmh: dropped a hook prompt for session ${p.sessionId}: older than 24 h`);
      }
      return;
    }
    if (!p.spawn && await this.#delivery.takenBefore(p, lease)) return;
    if (p.spawn && !await this.#spawn(p, lease, lost.signal, fresh)) return;
    await deliverWhenReady(p, {
      hub: this.#deps.hub,
      sessions: this.#deps.sessions,
      retry: this.retry,
      signal: lost.signal,
      deliver: () => this.#delivery.deliver(p, work),
      fail: (error, tries) => this.#fail(p, lease, error, tries),
    });
  }

  /**
   * Run the prompt's spawn (again, when its last claimant died mid-spawn).
   * @param fresh the first try: no worker can have been left
   * @returns false when the prompt goes no further now
   */
  async #spawn(p: PendingPrompt, lease: PromptLease, signal: AbortSignal, fresh: boolean): Promise<boolean> {
    const { spawner } = this.#deps;
    // A worker the last claimant (any replica on this engine: found by its labels) left mid-spawn may never
    // send its ready signal: it goes, and the spawn runs again under the same session id. None: NotFound.
    if (!fresh) await spawner.stopSession(p.sessionId).catch(() => {});
    const engineDeadline = Date.now() + ONLINE_WAIT_MS;
    const { repo, branch, ask } = p.spawn!;
    const body = { repo, ...(branch ? { branch } : {}), ask };
    for (let tries = 1;; tries++) {
      try {
        await spawner.spawn(body, { sessionId: p.sessionId });
        break;
      } catch (error) {
        if (signal.aborted) return false;
        if (error instanceof UnavailableError && Date.now() + this.spawnRetryMs < engineDeadline) {
          if (tries === 1) console.warn(`lvmh: hook spawn on ${repo} waits for the engine: ${error.message}`);
          await pause(this.spawnRetryMs, signal);
          if (signal.aborted) return false;
          continue;
        }
        // It failed (reported as spawn.failed), and its prompt goes with it.
        await this.#log.failed(lease);
        throw error;
      }
    }
    if (!await this.#log.markSpawned(lease)) return false;
    p.spawn = null;
    return true;
  }

  /** Give a prompt up where a person sees it (the audit log), once: only the lease's holder records it. */
  async #fail(p: PendingPrompt, lease: PromptLease, error: string, tries: number): Promise<void> {
    if (!await this.#log.failed(lease)) return;
    console.warn(`lvmh: a hook prompt for session ${p.sessionId} failed: ${error}`);
    this.#deps.audit.append({
      actor: p.actor,
      role: null,
      action: "hook.prompt.failed",
      sessionId: p.sessionId,
      detail: { promptId: p.id, error, tries, message: p.message, ...p.detail },
    });
  }
}

/** A follow-up for a known session, as kept: sent once it is online and idle. */
export function followUpPrompt(
  sessionId: string,
  message: string,
  actor: string,
  detail: Record<string, unknown> = {},
): PendingPrompt {
  return {
    id: crypto.randomUUID(),
    sessionId,
    message,
    deliverAs: "followUp",
    actor,
    detail,
    spawn: null,
    createdAt: Date.now(),
    sentAfter: null,
    waitIdle: true,
  };
}
