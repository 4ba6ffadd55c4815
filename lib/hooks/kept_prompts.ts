/**
 * Hook prompts kept in SQLite until their session's plugin took them: a spawn hook's prompt from before its
 * 202 (the spawn first, then the prompt once the new session is online). A plugin with feature `prompt_once`
 * answers each prompt with `command_result`; the row stays until an `ok` one is stored, and the prompt goes
 * again after a restart or on a new socket (the plugin takes a promptId once). An older plugin never answers:
 * its row goes as the frame is sent.
 *
 * Two ends are looked after:
 * - an answer stored by a daemon killed before it dropped the row: the event log is read before every send
 *   (so also at start), and a prompt already taken is dropped, not sent again;
 * - a refusal (`ok: false`, e.g. "no live pi session" while pi reloads): the prompt goes again with backoff,
 *   for at most `RefusalRetry.forMs` after its first refusal in this daemon run; then it is dropped and
 *   recorded as `hook.prompt.failed` in the audit log (with the session, so a person finds it there).
 *
 * A follow-up kept with `waitIdle` (a failed pipeline's) waits until its session is online with no run active,
 * for up to `PROMPT_KEEP_MS`: it never lands in the middle of a run.
 */
import type { Audit } from "../audit.ts";
import type { Config } from "../config.ts";
import type { Hub } from "../hub.ts";
import type { Sessions } from "../sessions.ts";
import type { Spawner } from "../spawner.ts";
import type { Store } from "../store.ts";
import { UnavailableError } from "../errors.ts";
import type { HookStore, PendingPrompt } from "./hook_store.ts";
import { pause, whenOnline } from "./session_waits.ts";
import { type Delivered, PromptDelivery } from "./prompt_delivery.ts";

/** How long a spawned session has to come online (from each daemon start) before its prompt is dropped. */
export const ONLINE_WAIT_MS = 15 * 60_000;
/** A kept prompt older than this is dropped at start: whatever asked for it has moved on. */
export const PROMPT_KEEP_MS = 24 * 3600_000;
/** The ask set of a webhook-started run when the daemon's is empty: a hook never starts an unguarded run. */
const FALLBACK_ASK = ["bash", "edit", "write"];

/** How a refused prompt is tried again: after `firstMs`, doubling up to `maxMs`, for `forMs` in all. */
export interface RefusalRetry {
  firstMs: number;
  maxMs: number;
  forMs: number;
}

/**
 * Two minutes covers a `/reload` (seconds) or a pi restarting in place, with about a dozen tries; a refusal
 * that outlasts it is not passing.
 */
export const REFUSAL_RETRY: RefusalRetry = { firstMs: 500, maxMs: 15_000, forMs: 2 * 60_000 };

/** What `deliverWhenReady` needs of the keeper carrying one prompt. */
export interface Carrier {
  hub: Hub;
  sessions: Pick<Sessions, "get">;
  retry: RefusalRetry;
  /** Shutdown (or, with replicas, the prompt's lease lost): the wait ends and nothing more is done. */
  signal: AbortSignal;
  /** One try at handing the prompt over. */
  deliver(): Promise<Delivered>;
  /** Give the prompt up where a person sees it. */
  fail(error: string, tries: number): void | Promise<void>;
}

/**
 * Wait for the prompt's session (online, and idle for a follow-up that waits for the run to end), hand the
 * prompt over, and try a refused one again within `RefusalRetry`; the single daemon's keeper and the replicas'
 * (shared_kept_prompts.ts) carry a prompt the same way.
 */
export async function deliverWhenReady(p: PendingPrompt, c: Carrier): Promise<void> {
  // Each start gives the session the full wait: a daemon that was down for a while still delivers. A
  // follow-up that waits for the run to end may wait as long as it is kept.
  const waitMs = p.waitIdle ? Math.max(0, p.createdAt + PROMPT_KEEP_MS - Date.now()) : ONLINE_WAIT_MS;
  let deadline = Date.now() + waitMs;
  let refused: { since: number; tries: number; delayMs: number } | null = null;
  for (;;) {
    const left = deadline - Date.now();
    try {
      if (left <= 0) {
        throw new Error(`session "${p.sessionId}" did not come online in ${waitMs / 60_000} min`);
      }
      const ready = (s: { online: boolean; state: string } | null | undefined) =>
        s?.online === true && (!p.waitIdle || s.state === "idle");
      await whenOnline(c.hub, () => ready(c.sessions.get(p.sessionId)), p.sessionId, left, c.signal, ready);
    } catch (error) {
      // Shutdown (the prompt stays for the next start) or taken over: not this keeper's to give up.
      if (c.signal.aborted) return;
      return await c.fail((error as Error).message, refused?.tries ?? 0);
    }
    const delivered = await c.deliver();
    if (delivered === "done") return;
    // Sent, then a new socket came before the answer: a full wait again (the send may have been long ago).
    if (delivered === "again") deadline = Date.now() + waitMs;
    if (typeof delivered !== "object") continue;
    refused ??= { since: Date.now(), tries: 0, delayMs: c.retry.firstMs };
    refused.tries++;
    if (Date.now() + refused.delayMs - refused.since > c.retry.forMs) {
      const error =
        `refused ${refused.tries} time(s) in ${Math.round((Date.now() - refused.since) / 1000)} s: ` +
        delivered.refused;
      return await c.fail(error, refused.tries);
    }
    await pause(refused.delayMs, c.signal);
    if (c.signal.aborted) return;
    refused.delayMs = Math.min(refused.delayMs * 2, c.retry.maxMs);
  }
}

/** A new spawn hook's prompt: the session's id is allocated here, its worker asked with the daemon's ask set. */
export function spawnPrompt(
  config: Pick<Config, "spawnAsk">,
  repo: string,
  branch: string | undefined,
  message: string,
  actor: string,
  detail: Record<string, unknown>,
): PendingPrompt {
  const { spawnAsk } = config;
  const ask = spawnAsk === "all" || spawnAsk.length ? spawnAsk : FALLBACK_ASK;
  return {
    id: crypto.randomUUID(),
    sessionId: crypto.randomUUID(),
    message,
    deliverAs: "steer",
    actor,
    detail: { repo, spawned: true, ...detail },
    spawn: { repo, branch: branch ?? null, ask },
    createdAt: Date.now(),
    sentAfter: null,
  };
}

/** The daemon parts kept prompts use (read at each use, so later swaps count). */
export interface KeptPromptDeps {
  store: Store;
  config: Config;
  sessions: Sessions;
  spawner: Spawner;
  hub: Hub;
  audit: Audit;
}

/** The kept prompts of one daemon run. */
export class KeptPrompts {
  #deps: KeptPromptDeps;
  #store: HookStore;
  #later: (what: string, work: () => Promise<void>) => void;
  /** Hands each prompt over and hears the plugins' hellos (`prompt_delivery.ts`). */
  #delivery: PromptDelivery;
  #stop = new AbortController();
  /** How long a hook's spawn waits before it tries an unreachable engine again (tests shorten it). */
  spawnRetryMs = 5000;
  /** How a refused prompt is tried again (tests shorten it). */
  retry: RefusalRetry = REFUSAL_RETRY;

  /** @param later runs work after the caller's response went out, logging what it throws */
  constructor(
    deps: KeptPromptDeps,
    store: HookStore,
    later: (what: string, work: () => Promise<void>) => void,
  ) {
    this.#deps = deps;
    this.#store = store;
    this.#later = later;
    this.#delivery = new PromptDelivery(deps, store, this.#stop.signal);
    // Read now, while the store is surely open; the work waits for the spawner's recovery.
    const kept = this.#store.prompts();
    if (kept.length) later("resuming hook prompts", () => this.#resume(kept));
  }

  /** A plugin said hello (its welcome is sent): see `PromptDelivery.pluginHello`. */
  pluginHello(sessionId: string, features: unknown): void {
    this.#delivery.pluginHello(sessionId, features);
  }

  /**
   * Spawn a session on `repo`/`branch` and prompt it once it is online. The new session's id is allocated
   * here and returned at once. The prompt is written to SQLite before this returns, so a restart before it
   * reached the session runs the spawn again under the same id (see `#resume`) and still delivers it once.
   * With `dedupe`, the delivery key and the prompt are written together: a replay names the first spawn.
   */
  queueSpawn(
    repo: string,
    branch: string | undefined,
    message: string,
    actor: string,
    detail: Record<string, unknown> = {},
    dedupe?: { source: string; key: string },
  ): { sessionId: string; duplicate: boolean } {
    const pending = spawnPrompt(this.#deps.config, repo, branch, message, actor, detail);
    if (dedupe) {
      const claimed = this.#store.claimSpawn(dedupe.source, dedupe.key, pending);
      if (claimed.duplicate) return claimed;
    } else {
      this.#store.addPrompt(pending);
    }
    return this.#spawnKept(pending, actor, repo, branch);
  }

  /** The kept spawn's prompt is written: audit it and carry it in the background. */
  #spawnKept(
    pending: PendingPrompt,
    actor: string,
    repo: string,
    branch: string | undefined,
  ): { sessionId: string; duplicate: boolean } {
    this.#deps.audit.append({
      actor,
      role: null,
      action: "hook.spawn",
      sessionId: pending.sessionId,
      detail: { repo, branch: branch ?? null },
    });
    this.#later(`hook spawn on ${repo}`, () => this.#carry(pending));
    return { sessionId: pending.sessionId, duplicate: false };
  }

  /**
   * Keep a follow-up for a known session and send it once the session is online and idle (no run active). The
   * row is written before this returns (inside the caller's transaction, when there is one).
   * @returns the prompt's id
   */
  queueFollowUp(
    sessionId: string,
    message: string,
    actor: string,
    detail: Record<string, unknown> = {},
  ): string {
    const pending: PendingPrompt = {
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
    this.#store.addPrompt(pending);
    this.#later(`hook follow-up for session ${sessionId}`, () => this.#carry(pending));
    return pending.id;
  }

  /** Stop waiting (shutdown): the prompts stay in SQLite for the next start. @returns how many are kept */
  close(): number {
    this.#stop.abort();
    return this.#store.prompts().length;
  }

  /** Prompts still kept from before a restart: take each on from where it stopped. */
  async #resume(kept: PendingPrompt[]): Promise<void> {
    await this.#deps.spawner.recovered();
    for (const p of kept) {
      if (Date.now() - p.createdAt > PROMPT_KEEP_MS) {
        this.#store.takePrompt(p.id);
        console.warn(`lvmh: dropped a hook prompt for session ${p.sessionId}: older than 24 h`);
        continue;
      }
      // Taken before the daemon died, which then had no time to drop it: never sent again.
      if (!p.spawn && this.#delivery.takenBefore(p)) continue;
      // Still marked to spawn: the daemon died mid-spawn. A worker it left may never have had its ready
      // signal (it would wait for ever), so it goes, and the spawn runs again under the same session id.
      if (p.spawn && this.#deps.spawner.jobs().some((j) => j.sessionId === p.sessionId)) {
        await this.#deps.spawner.stopSession(p.sessionId).catch(() => {});
      }
      this.#later(`hook prompt for session ${p.sessionId}`, () => this.#carry(p));
    }
  }

  /** Spawn when still needed, wait for the session, then hand the prompt over exactly once. */
  async #carry(p: PendingPrompt): Promise<void> {
    if (p.spawn && !await this.#spawn(p)) return;
    // On shutdown the row stays for the next start (`close` says how many).
    await deliverWhenReady(p, {
      hub: this.#deps.hub,
      sessions: this.#deps.sessions,
      retry: this.retry,
      signal: this.#stop.signal,
      deliver: () => this.#delivery.deliver(p),
      fail: (error, tries) => this.#fail(p, error, tries),
    });
  }

  /** Run the prompt's spawn (again after a restart). @returns false when the prompt goes no further now */
  async #spawn(p: PendingPrompt): Promise<boolean> {
    const engineDeadline = Date.now() + ONLINE_WAIT_MS;
    const { repo, branch, ask } = p.spawn!;
    const body = { repo, ...(branch ? { branch } : {}), ask };
    for (let tries = 1;; tries++) {
      try {
        await this.#deps.spawner.spawn(body, { sessionId: p.sessionId });
        break;
      } catch (error) {
        // Shutdown cut the spawn short: the row stays and the next start spawns again.
        if (this.#stop.signal.aborted) return false;
        // No engine (yet: a daemon that starts before Docker does): try again while the prompt is wanted.
        if (error instanceof UnavailableError && Date.now() + this.spawnRetryMs < engineDeadline) {
          if (tries === 1) {
            console.warn(`lvmh: hook spawn on ${repo} waits for the engine: ${error.message}`);
          }
          await pause(this.spawnRetryMs, this.#stop.signal);
          if (this.#stop.signal.aborted) return false;
          continue;
        }
        // It failed (reported as spawn.failed), and its prompt goes with it.
        this.#store.takePrompt(p.id);
        throw error;
      }
    }
    try {
      this.#store.markSpawned(p.id);
    } catch (error) {
      // The daemon closed its store meanwhile: the next start finds this worker and spawns again.
      if (this.#stop.signal.aborted) return false;
      throw error;
    }
    p.spawn = null;
    return true;
  }

  /** Give a prompt up where a person sees it: the audit log, under the session. */
  #fail(p: PendingPrompt, error: string, tries: number): void {
    this.#store.takePrompt(p.id);
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
