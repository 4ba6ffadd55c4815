/**
 * Inbound hooks: what the hook routes hand over after they answer 202 at once. A prompt into the session
 * working on a repository and branch (sent now), or a spawn there (with the daemon's default ask set: a run a
 * webhook started never gets "approve all") followed by the prompt once the new session is online (kept in
 * SQLite until taken: `kept_prompts.ts`). Also the delivery keys already handled and the GitLab hook secret
 * (`gitlab_secret.ts`). Every action is audited with the hook as the actor.
 */
import { z } from "zod";
import type { Gitlab } from "../gitlab.ts";
import { BranchName, RepoPath, SessionId } from "../protocol.ts";
import { MAX_PROMPT_CHARS } from "../wire.ts";
import { HookStore } from "./hook_store.ts";
import { GitlabSecret } from "./gitlab_secret.ts";
import { type KeptPromptDeps, KeptPrompts } from "./kept_prompts.ts";
import { findSession } from "./find_session.ts";
import { sendHookPrompt } from "./send.ts";
import { type GitlabAction, promptFor } from "./gitlab_events.ts";

/** `POST /hooks/generic`. */
export const GenericHookBody = z.object({
  sessionId: SessionId.optional(),
  message: z.string().trim().min(1, "message must not be empty").max(MAX_PROMPT_CHARS),
  followUp: z.boolean().default(false),
  spawn: z.object({ repo: RepoPath, branch: BranchName.optional() }).optional(),
}).refine((b) => b.sessionId !== undefined || b.spawn !== undefined, {
  message: "either sessionId or spawn is required",
});
export type GenericHookBody = z.infer<typeof GenericHookBody>;

/** The daemon parts hooks use (the daemon passes its `App`; read at each use, so later swaps count). */
export interface HookDeps extends KeptPromptDeps {
  gitlab: Gitlab;
}

/** Inbound hook state and work. */
export class Hooks {
  #deps: HookDeps;
  #store: HookStore;
  #kept: KeptPrompts;
  #pending = new Set<Promise<void>>();
  /** The GitLab hook secret: `LVMH_GITLAB_HOOK_SECRET`, else the one set through the API. */
  readonly gitlabSecret: GitlabSecret;

  /** @param envSecret `LVMH_GITLAB_HOOK_SECRET`, or null when it is not set */
  constructor(deps: HookDeps, envSecret: string | null) {
    this.#deps = deps;
    this.#store = new HookStore(deps.store.db);
    this.gitlabSecret = new GitlabSecret(this.#store, envSecret);
    this.#kept = new KeptPrompts(deps, this.#store, (what, work) => this.later(what, work));
  }

  /** How long a hook's spawn waits before it tries an unreachable engine again (tests shorten it). */
  get spawnRetryMs(): number {
    return this.#kept.spawnRetryMs;
  }
  set spawnRetryMs(ms: number) {
    this.#kept.spawnRetryMs = ms;
  }

  /** The kept prompts (tests shorten their timings). */
  get kept(): KeptPrompts {
    return this.#kept;
  }

  /** A plugin said hello (its welcome is sent): see `KeptPrompts.pluginHello`. */
  pluginHello(sessionId: string, features: unknown): void {
    this.#kept.pluginHello(sessionId, features);
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
    const kept = this.#kept.close();
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
    if (action.kind === "note" && action.author === this.#deps.gitlab.status().username) return;
    const message = promptFor(action);
    const sessionId = findSession(this.#deps, action.repo, action.branch);
    if (sessionId) {
      sendHookPrompt(this.#deps, {
        sessionId,
        message,
        deliverAs: "followUp",
        actor,
        detail: { gitlab: action.kind, repo: action.repo },
      });
      return;
    }
    // A failed pipeline on a branch no session works on is not lvmh's business.
    if (action.kind !== "note") return;
    this.queueSpawn(action.repo, action.branch ?? undefined, message, actor, { gitlab: action.kind });
  }

  /** Spawn a session and prompt it once online: see `KeptPrompts.queueSpawn`. */
  queueSpawn(
    repo: string,
    branch: string | undefined,
    message: string,
    actor: string,
    detail: Record<string, unknown> = {},
    dedupe?: { source: string; key: string },
  ): { sessionId: string; duplicate: boolean } {
    return this.#kept.queueSpawn(repo, branch, message, actor, detail, dedupe);
  }

  /** Prompt a live session now, as the generic hook does. @throws what `sessions.prompt` throws. */
  prompt(sessionId: string, message: string, followUp: boolean, actor: string): void {
    sendHookPrompt(this.#deps, { sessionId, message, deliverAs: followUp ? "followUp" : "steer", actor });
  }
}
