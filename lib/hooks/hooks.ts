/**
 * Inbound hooks, the one owner of hook delivery keys and the GitLab hook secret. Routes answer 202 at once and
 * hand the work here: a prompt into the session working on a repository and branch, or a spawn there (with the
 * daemon's default ask set: a run a webhook started never gets "approve all") followed by the prompt once the
 * new session is online. Such a prompt is kept in SQLite from before the 202 until the plugin answers it with
 * `command_result` (a plugin with feature `prompt_once`; older ones: until it is sent), and sent again after a
 * restart or a reconnect, so a daemon restart in between neither loses nor repeats it (such a plugin takes a
 * promptId once). Every action is audited with the hook as the actor.
 */
import { z } from "zod";
import type { Store } from "../store.ts";
import type { Config } from "../config.ts";
import type { Gitlab } from "../gitlab.ts";
import type { Sessions } from "../sessions.ts";
import type { Spawner } from "../spawner.ts";
import type { Audit } from "../audit.ts";
import { safeEqual } from "../auth.ts";
import { UnavailableError } from "../errors.ts";
import { BranchName, Feature, RepoPath } from "../protocol.ts";
import type { Hub } from "../hub.ts";
import { commandAnswer, whenOnline } from "./session_waits.ts";
import { HookStore, type PendingPrompt } from "./hook_store.ts";
import { type GitlabAction, promptFor } from "./gitlab_events.ts";

/** `POST /hooks/generic`. */
export const GenericHookBody = z.object({
  sessionId: z.string().min(1).max(200).optional(),
  message: z.string().trim().min(1, "message must not be empty").max(100_000),
  followUp: z.boolean().default(false),
  spawn: z.object({ repo: RepoPath, branch: BranchName.optional() }).optional(),
}).refine((b) => b.sessionId !== undefined || b.spawn !== undefined, {
  message: "either sessionId or spawn is required",
});
export type GenericHookBody = z.infer<typeof GenericHookBody>;

/** `PUT /api/hooks/gitlab`. */
export const GitlabSecretBody = z.object({ secret: z.string().min(16, "secret is too short").max(256) });

/** How long a spawned session has to come online (from each daemon start) before its prompt is dropped. */
export const ONLINE_WAIT_MS = 15 * 60_000;
/** A kept prompt older than this is dropped at start: whatever asked for it has moved on. */
export const PROMPT_KEEP_MS = 24 * 3600_000;
/** The ask set of a webhook-started run when the daemon's is empty: a hook never starts an unguarded run. */
const FALLBACK_ASK = ["bash", "edit", "write"];

const SECRET_KEY = "gitlab.secret";

/** The daemon parts hooks use (the daemon passes its `App`; read at each use, so later swaps count). */
export interface HookDeps {
  store: Store;
  config: Config;
  gitlab: Gitlab;
  sessions: Sessions;
  spawner: Spawner;
  hub: Hub;
  audit: Audit;
}

/** Inbound hook state and work. */
export class Hooks {
  #store: HookStore;
  /** The optional features each session's plugin listed in its latest `hello`. */
  #features = new Map<string, ReadonlySet<string>>();
  /** Told when a session's plugin says hello (a new socket: a prompt sent to the old one may be lost). */
  #hellos = new Map<string, Set<() => void>>();
  #pending = new Set<Promise<void>>();
  #stop = new AbortController();
  /** How long a hook's spawn waits before it tries an unreachable engine again (tests shorten it). */
  spawnRetryMs = 5000;

  constructor(private readonly app: HookDeps, private readonly envSecret: string | null) {
    this.#store = new HookStore(app.store.db);
    // Read now, while the store is surely open; the work waits for the spawner's recovery.
    const kept = this.#store.prompts();
    if (kept.length) this.later("resuming hook prompts", () => this.#resume(kept));
  }

  /**
   * A plugin said hello (its welcome is sent): what it supports, and a kept prompt sent to an earlier socket of
   * the session, still unanswered, goes again (the plugin takes a promptId once).
   */
  pluginHello(sessionId: string, features: unknown): void {
    // Bounded: a plugin lists a few short names, and only known ones are ever asked about.
    const listed = Array.isArray(features)
      ? features.slice(0, 32).filter((f): f is string => typeof f === "string" && f.length <= 64)
      : [];
    this.#features.set(sessionId, new Set(listed));
    for (const again of [...this.#hellos.get(sessionId) ?? []]) again();
  }

  /** The GitLab hook secret: `LVMH_GITLAB_HOOK_SECRET` wins over one set through the API; null when none. */
  gitlabSecret(): string | null {
    return this.envSecret ?? this.#store.get(SECRET_KEY);
  }

  /** Store the GitLab hook secret (ignored while `LVMH_GITLAB_HOOK_SECRET` is set; the answer says so). */
  setGitlabSecret(secret: string): { fromEnv: boolean } {
    this.#store.set(SECRET_KEY, secret);
    return { fromEnv: this.envSecret !== null };
  }

  /** Remove the secret set through the API (the hook answers 404 again unless the environment sets one). */
  clearGitlabSecret(): { fromEnv: boolean } {
    this.#store.unset(SECRET_KEY);
    return { fromEnv: this.envSecret !== null };
  }

  /** Where the GitLab hook secret comes from: the environment wins over the API. */
  gitlabSecretSource(): "env" | "api" | null {
    return this.envSecret !== null ? "env" : this.#store.get(SECRET_KEY) !== null ? "api" : null;
  }

  /** True when `token` is the GitLab hook secret (constant-time). */
  async checkGitlabToken(token: string | null): Promise<boolean> {
    const secret = this.gitlabSecret();
    return secret !== null && token !== null && await safeEqual(token, secret);
  }

  /** Record a delivery key; false when it was handled before. */
  claim(source: string, key: string): boolean {
    return this.#store.claim(source, key);
  }

  /** Run `work` after the response went out; errors are logged, never thrown at the caller. */
  later(what: string, work: () => Promise<void>): void {
    const p = new Promise<void>((resolve) => setTimeout(resolve, 0)).then(work).catch((error) => {
      console.error(`lvmh: ${what}: ${(error as Error).message}`);
    }).finally(() => this.#pending.delete(p));
    this.#pending.add(p);
  }

  /** Wait for the work in flight (tests). */
  async idle(): Promise<void> {
    while (this.#pending.size) await Promise.allSettled([...this.#pending]);
  }

  /** Stop waiting for spawned sessions (shutdown): their prompts stay in SQLite for the next start. */
  close(): void {
    this.#stop.abort();
    const kept = this.#store.prompts().length;
    if (kept) {
      console.log(`lvmh: ${kept} hook prompt(s) wait for their sessions; they go out after the next start`);
    }
  }

  /**
   * Act on a GitLab event: follow up the session on its repo and branch, or spawn one for a comment. Runs
   * before the route answers (it only sends a frame or writes a row), so what GitLab was told is taken is kept.
   */
  gitlab(action: GitlabAction): void {
    const actor = "hook:gitlab";
    if (action.kind === "note" && action.author === this.app.gitlab.status().username) return;
    const message = promptFor(action);
    const sessionId = this.findSession(action.repo, action.branch);
    if (sessionId) {
      this.#prompt(sessionId, message, true, actor, { gitlab: action.kind, repo: action.repo });
      return;
    }
    // A failed pipeline on a branch no session works on is not lvmh's business.
    if (action.kind !== "note") return;
    this.queueSpawn(action.repo, action.branch ?? undefined, message, actor, { gitlab: action.kind });
  }

  /**
   * Spawn a session on `repo`/`branch` and prompt it once it is online. The new session's id is allocated
   * here and returned at once. The prompt is written to SQLite before this returns, so a restart before it
   * reached the session runs the spawn again under the same id (see `#resume`) and still delivers it once.
   */
  queueSpawn(
    repo: string,
    branch: string | undefined,
    message: string,
    actor: string,
    detail: Record<string, unknown> = {},
    dedupe?: { source: string; key: string },
  ): { sessionId: string; duplicate: boolean } {
    const ask = this.app.config.spawnAsk === "all" || this.app.config.spawnAsk.length
      ? this.app.config.spawnAsk
      : FALLBACK_ASK;
    const pending: PendingPrompt = {
      id: crypto.randomUUID(),
      sessionId: crypto.randomUUID(),
      message,
      deliverAs: "steer",
      actor,
      detail: { repo, spawned: true, ...detail },
      spawn: { repo, branch: branch ?? null, ask },
      createdAt: Date.now(),
    };
    // With a delivery key, the key and the prompt are written together: a replay names the first spawn.
    if (dedupe) {
      const claimed = this.#store.claimSpawn(dedupe.source, dedupe.key, pending);
      if (claimed.duplicate) return claimed;
    } else {
      this.#store.addPrompt(pending);
    }
    this.app.audit.append({
      actor,
      role: null,
      action: "hook.spawn",
      sessionId: pending.sessionId,
      detail: { repo, branch: branch ?? null },
    });
    this.later(`hook spawn on ${repo}`, () => this.#carry(pending));
    return { sessionId: pending.sessionId, duplicate: false };
  }

  /** Prompts a hook spawned for, still waiting from before a restart: take each on from where it stopped. */
  async #resume(kept: PendingPrompt[]): Promise<void> {
    await this.app.spawner.recovered();
    for (const p of kept) {
      if (Date.now() - p.createdAt > PROMPT_KEEP_MS) {
        this.#store.takePrompt(p.id);
        console.warn(`lvmh: dropped a hook prompt for session ${p.sessionId}: older than 24 h`);
        continue;
      }
      // Still marked to spawn: the daemon died mid-spawn. A worker it left may never have had its ready
      // signal (it would wait for ever), so it goes, and the spawn runs again under the same session id.
      if (p.spawn && this.app.spawner.jobs().some((j) => j.sessionId === p.sessionId)) {
        await this.app.spawner.stopSession(p.sessionId).catch(() => {});
      }
      this.later(`hook prompt for session ${p.sessionId}`, () => this.#carry(p));
    }
  }

  /** Spawn when still needed, wait for the session, then hand the prompt over exactly once. */
  async #carry(p: PendingPrompt): Promise<void> {
    if (p.spawn) {
      const engineDeadline = Date.now() + ONLINE_WAIT_MS;
      const { repo, branch, ask } = p.spawn;
      const body = { repo, ...(branch ? { branch } : {}), ask };
      for (let tries = 1;; tries++) {
        try {
          await this.app.spawner.spawn(body, { sessionId: p.sessionId });
          break;
        } catch (error) {
          // Shutdown cut the spawn short: the row stays and the next start spawns again.
          if (this.#stop.signal.aborted) return;
          // No engine (yet: a daemon that starts before Docker does): try again while the prompt is wanted.
          if (error instanceof UnavailableError && Date.now() + this.spawnRetryMs < engineDeadline) {
            if (tries === 1) {
              console.warn(`lvmh: hook spawn on ${repo} waits for the engine: ${error.message}`);
            }
            await this.#pause(this.spawnRetryMs);
            if (this.#stop.signal.aborted) return;
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
        if (this.#stop.signal.aborted) return;
        throw error;
      }
      p.spawn = null;
    }
    // Each start gives the session the full wait: a daemon that was down for a while still delivers.
    let deadline = Date.now() + ONLINE_WAIT_MS;
    for (;;) {
      const left = deadline - Date.now();
      try {
        if (left <= 0) {
          throw new Error(`session "${p.sessionId}" did not come online in ${ONLINE_WAIT_MS / 60_000} min`);
        }
        await whenOnline(
          this.app.hub,
          () => this.app.sessions.get(p.sessionId)?.online === true,
          p.sessionId,
          left,
          this.#stop.signal,
        );
      } catch (error) {
        // Shutdown: the row stays for the next start (`close` says how many).
        if (this.#stop.signal.aborted) return;
        this.#store.takePrompt(p.id);
        throw error;
      }
      const delivered = await this.#deliver(p);
      if (delivered === true) return;
      // Sent, then a new socket came before the answer: a full wait again (the send may have been long ago).
      if (delivered === "again") deadline = Date.now() + ONLINE_WAIT_MS;
    }
  }

  /**
   * Send a kept prompt if its session is online. To a plugin with feature `prompt_once` the row stays until
   * its `command_result` for the promptId is stored, so a kill before that leaves it for the next start, and a
   * new socket before that gets it again (the plugin takes it once). To an older plugin, which never answers,
   * the row is deleted and the frame sent in one synchronous step: a kill either leaves the row (sent after
   * the restart) or finds it gone with the frame queued (lost if the kill came before it left).
   * @returns true once handed over; false when the session is offline (still kept, not sent); "again" when
   * it was sent but a new socket of the session came before its answer (still kept, to be sent again).
   * @throws what `sessions.send` threw; the prompt is kept for the next start.
   */
  async #deliver(p: PendingPrompt): Promise<boolean | "again"> {
    if (!this.app.sessions.get(p.sessionId)?.online) return false;
    const followUp = p.deliverAs === "followUp";
    if (!this.#features.get(p.sessionId)?.has(Feature.promptOnce)) {
      if (!this.#store.takePrompt(p.id)) return true;
      try {
        this.#send(p.sessionId, p.id, p.message, followUp, p.actor, p.detail);
        return true;
      } catch (error) {
        this.#store.addPrompt(p);
        throw error;
      }
    }
    const answer = commandAnswer(
      this.app.hub,
      p.sessionId,
      p.id,
      this.#stop.signal,
      (again) => this.#onHello(p.sessionId, again),
    );
    try {
      this.#send(p.sessionId, p.id, p.message, followUp, p.actor, p.detail);
    } catch (error) {
      answer.cancel();
      throw error;
    }
    const a = await answer.promise;
    if (a === "again") return "again";
    if (a === "stopped") return true; // shutdown: the row stays for the next start
    this.#store.takePrompt(p.id);
    if (!a.ok) {
      console.warn(`lvmh: session ${p.sessionId} refused a hook prompt: ${a.error ?? "no reason"}`);
    }
    return true;
  }

  /** Call `again` at the session's next hello. @returns its removal */
  #onHello(sessionId: string, again: () => void): () => void {
    let calls = this.#hellos.get(sessionId);
    if (!calls) this.#hellos.set(sessionId, calls = new Set());
    calls.add(again);
    return () => {
      calls.delete(again);
      if (!calls.size && this.#hellos.get(sessionId) === calls) this.#hellos.delete(sessionId);
    };
  }

  /** Prompt a live session now, as the generic hook does. @throws what `sessions.send` throws. */
  prompt(sessionId: string, message: string, followUp: boolean, actor: string): void {
    this.#prompt(sessionId, message, followUp, actor, {});
  }

  /**
   * The online session working on `repo` (and `branch` when given): spawned jobs first, where lvmh knows the
   * branch; then sessions that report that repository.
   */
  findSession(repo: string, branch: string | null): string | null {
    const online = (id: string) => this.app.sessions.get(id)?.online === true;
    for (const job of this.app.spawner.jobs()) {
      if (job.repo !== repo || job.state !== "running") continue;
      if (branch !== null && job.branch !== null && job.branch !== branch) continue;
      if (online(job.sessionId)) return job.sessionId;
    }
    for (const s of this.app.sessions.list()) {
      if (!s.online || !s.repo) continue;
      const r = s.repo.replace(/\.git$/, "");
      if (r === repo || r.endsWith(`/${repo}`) || r.endsWith(`:${repo}`)) return s.id;
    }
    return null;
  }

  #prompt(sessionId: string, message: string, followUp: boolean, actor: string, detail: object): void {
    this.#send(sessionId, crypto.randomUUID(), message, followUp, actor, detail);
  }

  #send(
    sessionId: string,
    promptId: string,
    message: string,
    followUp: boolean,
    actor: string,
    detail: object,
  ) {
    const deliverAs = followUp ? "followUp" : "steer";
    // `by` (lib/protocol.ts's prompt frame) names the hook on the user message pi shows; send passes it on.
    const prompt = { type: "prompt", promptId, commandId: promptId, message, deliverAs, by: actor } as const;
    this.app.sessions.send(sessionId, prompt);
    this.app.audit.append({
      actor,
      role: null,
      action: "hook.prompt",
      sessionId,
      detail: { promptId, message, deliverAs, ...detail },
    });
  }

  /** Resolve after `ms`, or at once on shutdown. */
  #pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#stop.signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#stop.signal.addEventListener("abort", done);
    });
  }
}
