/**
 * Inbound hooks, the one owner of hook delivery keys and the GitLab hook secret. Routes answer 202 at once and
 * hand the work here: a prompt into the session working on a repository and branch, or a spawn there (with the
 * daemon's default ask set: a run a webhook started never gets "approve all") followed by the prompt once the
 * new session is online. Every action is audited with the hook as the actor.
 */
import { z } from "zod";
import type { Store } from "../store.ts";
import type { Config } from "../config.ts";
import type { Gitlab } from "../gitlab.ts";
import type { Sessions } from "../sessions.ts";
import type { Spawner } from "../spawner.ts";
import type { Audit } from "../audit.ts";
import { safeEqual } from "../auth.ts";
import { BranchName, RepoPath, type ServerFrame } from "../protocol.ts";
import type { Hub, Subscriber } from "../hub.ts";
import { HookStore } from "./hook_store.ts";
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

/** How long a spawned session has to come online before its prompt is dropped. */
export const ONLINE_WAIT_MS = 15 * 60_000;
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
  #pending = new Set<Promise<void>>();
  #stop = new AbortController();

  constructor(private readonly app: HookDeps, private readonly envSecret: string | null) {
    this.#store = new HookStore(app.store.db);
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

  /** Stop waiting for spawned sessions (shutdown): their prompts are dropped, and logged. */
  close(): void {
    this.#stop.abort();
  }

  /** Act on a GitLab event: follow up the session on its repo and branch, or spawn one for a comment. */
  async gitlab(action: GitlabAction): Promise<void> {
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
    await this.spawnAndPrompt(action.repo, action.branch ?? undefined, message, actor);
  }

  /** Spawn a session on `repo`/`branch` and prompt it once it is online. */
  async spawnAndPrompt(
    repo: string,
    branch: string | undefined,
    message: string,
    actor: string,
  ): Promise<void> {
    const ask = this.app.config.spawnAsk === "all" || this.app.config.spawnAsk.length
      ? this.app.config.spawnAsk
      : FALLBACK_ASK;
    this.app.audit.append({
      actor,
      role: null,
      action: "hook.spawn",
      detail: { repo, branch: branch ?? null },
    });
    const { sessionId } = await this.app.spawner.spawn({ repo, ...(branch ? { branch } : {}), ask });
    await this.#whenOnline(sessionId, ONLINE_WAIT_MS);
    this.#prompt(sessionId, message, false, actor, { repo, spawned: true });
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
    const promptId = crypto.randomUUID();
    const deliverAs = followUp ? "followUp" : "steer";
    this.app.sessions.send(sessionId, { type: "prompt", promptId, commandId: promptId, message, deliverAs });
    this.app.audit.append({
      actor,
      role: null,
      action: "hook.prompt",
      sessionId,
      detail: { promptId, message, deliverAs, ...detail },
    });
  }

  /** Resolve once the session is online. @throws {Error} after `timeoutMs`. */
  #whenOnline(sessionId: string, timeoutMs: number): Promise<void> {
    if (this.app.sessions.get(sessionId)?.online) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const hub = this.app.hub;
      const done = () => {
        clearTimeout(timer);
        hub.leave(sub);
        this.#stop.signal.removeEventListener("abort", stopped);
      };
      const stopped = () => {
        done();
        reject(new Error(`the daemon stopped before session "${sessionId}" came online`));
      };
      this.#stop.signal.addEventListener("abort", stopped);
      const sub: Subscriber = {
        send(data) {
          if (!data.startsWith('{"type":"session_update"')) return;
          const frame = JSON.parse(data) as Extract<ServerFrame, { type: "session_update" }>;
          if (frame.sessions.some((s) => s.id === sessionId && s.online)) {
            done();
            resolve();
          }
        },
        bufferedAmount: () => 0,
        close() {},
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`session "${sessionId}" did not come online within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      hub.join(sub);
    });
  }
}
