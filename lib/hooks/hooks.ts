/**
 * Inbound hooks: what the hook routes hand over after they answer 202 at once. A prompt into the session
 * working on a repository and branch (sent now), or a spawn there (with the daemon's default ask set: a run a
 * webhook started never gets "approve all") followed by the prompt once the new session is online (kept until
 * taken: in SQLite alone, `kept_prompts.ts`; with replicas in the shared log, `shared_kept_prompts.ts`). Also the delivery keys already handled and the GitLab hook secret
 * (`gitlab_secret.ts`). Every action is audited with the hook as the actor.
 */
import { z } from "zod";
import type postgres from "postgres";
import type { Gitlab } from "../gitlab.ts";
import type { AnyMergeRequests } from "../merge_requests_shared.ts";
import type { MergeRequestChange } from "../merge_request_change.ts";
import type { SettingsAccess } from "../settings.ts";
import { BranchName, RepoPath, SessionId } from "../protocol.ts";
import { MAX_PROMPT_CHARS } from "../wire.ts";
import { HookStore } from "./hook_store.ts";
import { GitlabSecret } from "./gitlab_secret.ts";
import { type KeptPromptDeps, KeptPrompts } from "./kept_prompts.ts";
import { followUpPrompt, type PluginRows, SharedKeptPrompts } from "./shared_kept_prompts.ts";
import type { PendingPrompt } from "../storage/hook_prompt_log.ts";
import { findSession } from "./find_session.ts";
import { sendHookPrompt } from "./send.ts";
import { type GitlabAction, promptFor } from "./gitlab_events.ts";
import { MAX_PIPELINE_PROMPTS } from "../merge_request_change.ts";
import { PgHookPromptLog } from "../storage/pg_hook_prompt_log.ts";
import type { SharedDatabase } from "../storage/open.ts";

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
  mergeRequests: AnyMergeRequests;
  /** The deployment's settings, where the GitLab hook secret set through the API is kept. */
  settings: SettingsAccess;
  /** With replicas: the database they share, where the delivery keys and the prompts are kept, and the rows
   * that say what each session's plugin supports. */
  replica?: ({ db: SharedDatabase } & PluginRows) | null;
}

/** Inbound hook state and work. */
export class Hooks {
  #deps: HookDeps;
  #store: HookStore;
  /** Alone, in this daemon's file; with replicas, in the shared log (worked on under a lease). */
  #kept: KeptPrompts | SharedKeptPrompts;
  /** With replicas, the delivery keys of the deployment: a retry landing on another replica is a replay. */
  #shared: PgHookPromptLog | null;
  #pending = new Set<Promise<void>>();
  /** The GitLab hook secret: `LVMH_GITLAB_HOOK_SECRET`, else the one set through the API. */
  readonly gitlabSecret: GitlabSecret;

  /** @param envSecret `LVMH_GITLAB_HOOK_SECRET`, or null when it is not set */
  constructor(deps: HookDeps, envSecret: string | null) {
    this.#deps = deps;
    this.#store = new HookStore(deps.store.db);
    this.#shared = deps.replica ? new PgHookPromptLog(deps.replica.db.sql) : null;
    this.gitlabSecret = new GitlabSecret(deps.settings, envSecret);
    const later = (what: string, work: () => Promise<void>) => this.later(what, work);
    this.#kept = this.#shared
      ? new SharedKeptPrompts(
        deps,
        this.#shared,
        deps.replica!,
        deps.config.replicaId,
        deps.config.hookLeaseSeconds * 1000,
        later,
      )
      : new KeptPrompts(deps, this.#store, later);
    // A failed pipeline of a followed merge request, from the hook or the poller: a follow-up once the run
    // ends. Kept inside the record's save (the SQLite savepoint; with replicas the PostgreSQL transaction the
    // listener is handed), so the prompt and the mark that it was made commit together, or neither does.
    const keptIn = new WeakMap<MergeRequestChange, PendingPrompt>();
    deps.mergeRequests.onChange((change, tx?: unknown) => {
      if (!change.promptFailure) return;
      const { message, detail } = pipelineFollowUp(change);
      if (!(this.#kept instanceof SharedKeptPrompts)) {
        this.#kept.queueFollowUp(change.sessionId, message, "hook:gitlab", detail);
        return;
      }
      const pending = followUpPrompt(change.sessionId, message, "hook:gitlab", detail);
      keptIn.set(change, pending);
      return this.#shared!.keepWrites(pending)(tx as postgres.TransactionSql);
    }, { inTransaction: true });
    // Committed: this replica works on it at once (any replica's next sweep would otherwise).
    deps.mergeRequests.onChange((change) => {
      const pending = keptIn.get(change);
      if (pending && this.#kept instanceof SharedKeptPrompts) this.#kept.takeOn(pending);
    });
  }

  /** With replicas, take on the kept prompts once the replica follows the shared log (no-op alone). */
  start(): void {
    if (this.#kept instanceof SharedKeptPrompts) this.#kept.start();
  }

  /** How long a hook's spawn waits before it tries an unreachable engine again (tests shorten it). */
  get spawnRetryMs(): number {
    return this.#kept.spawnRetryMs;
  }
  set spawnRetryMs(ms: number) {
    this.#kept.spawnRetryMs = ms;
  }

  /** The kept prompts (tests shorten their timings). */
  get kept(): KeptPrompts | SharedKeptPrompts {
    return this.#kept;
  }

  /** A plugin said hello (its welcome is sent): see `KeptPrompts.pluginHello`. */
  pluginHello(sessionId: string, features: unknown): void {
    this.#kept.pluginHello(sessionId, features);
  }

  /** Record a delivery key; false when it was handled before (on any replica). */
  async claim(source: string, key: string): Promise<boolean> {
    if (this.#shared) return await this.#shared.claimDelivery(source, key);
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

  /**
   * Stop waiting for spawned sessions (shutdown): their prompts stay kept for the next start (alone) or are
   * released for the other replicas.
   */
  async close(): Promise<void> {
    const kept = await this.#kept.close();
    if (kept) {
      const next = this.#shared
        ? "another replica or the next start takes them on"
        : "they go out after the next start";
      console.log(`lvmh: ${kept} hook prompt(s) wait for their sessions; ${next}`);
    }
  }

  /**
   * Act on a GitLab event: a followed merge request's record is updated (its pipeline at once, else read
   * again), a `/lvmh` comment follows up the session on its repo and branch (or spawns one), and a failed
   * pipeline on a branch with no followed merge request follows up the session there once its run ends. Runs
   * before the route answers (it only sends a frame or writes rows), so what GitLab was told is taken is kept:
   * with replicas the merge request records and a kept prompt's row are written to the shared database.
   * @returns false when the event is none of lvmh's business
   */
  async gitlab(action: GitlabAction): Promise<boolean> {
    const actor = "hook:gitlab";
    // With replicas the records are on the shared database: awaited, so the pipeline is written before 202.
    const followed = (await this.#deps.mergeRequests.gitlabEvent(action)).length > 0;
    if (action.kind === "merge_request") return followed;
    if (action.kind === "pipeline") {
      // A followed merge request's failure is prompted for by its record's change (at most 3 per MR).
      if (followed) return true;
      if (action.status !== "failed") return false;
      const sessionId = findSession(this.#deps, action.repo, action.branch);
      if (!sessionId) return false; // a failed pipeline on a branch no session works on is not lvmh's business
      const kept = this.#kept.queueFollowUp(sessionId, promptFor(action), actor, {
        gitlab: action.kind,
        repo: action.repo,
      });
      return kept instanceof Promise ? kept.then(() => true) : true;
    }
    if (action.text === null || action.author === this.#deps.gitlab.status().username) return followed;
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
      return true;
    }
    const kept = this.#kept.queueSpawn(action.repo, action.branch ?? undefined, message, actor, {
      gitlab: action.kind,
    });
    return kept instanceof Promise ? kept.then(() => true) : true;
  }

  /** Spawn a session and prompt it once online: see `KeptPrompts.queueSpawn`. */
  queueSpawn(
    repo: string,
    branch: string | undefined,
    message: string,
    actor: string,
    detail: Record<string, unknown> = {},
    dedupe?: { source: string; key: string },
  ): Promise<{ sessionId: string; duplicate: boolean }> {
    return Promise.resolve(this.#kept.queueSpawn(repo, branch, message, actor, detail, dedupe));
  }

  /** Prompt a live session now, as the generic hook does. @throws what `sessions.prompt` throws. */
  prompt(sessionId: string, message: string, followUp: boolean, actor: string): void {
    sendHookPrompt(this.#deps, { sessionId, message, deliverAs: followUp ? "followUp" : "steer", actor });
  }
}

/** The follow-up a failed pipeline of a followed merge request makes: its message and its audit detail. */
function pipelineFollowUp(change: MergeRequestChange): { message: string; detail: Record<string, unknown> } {
  const { view } = change;
  const p = view.pipeline!;
  const jobs = change.failedJobs?.length ? ` Failed jobs: ${change.failedJobs.join(", ")}.` : "";
  const link = p.webUrl ? `\n${p.webUrl}` : "";
  const message =
    `The GitLab pipeline #${p.id} of merge request !${view.iid} (${view.sourceBranch}) failed.` +
    `${jobs}${link}\nLook at why and fix it, then commit. (lvmh sends at most ${MAX_PIPELINE_PROMPTS} ` +
    "failed-pipeline follow-ups per merge request.)";
  return { message, detail: { gitlab: "pipeline", repo: change.repo, iid: view.iid, pipelineId: p.id } };
}
