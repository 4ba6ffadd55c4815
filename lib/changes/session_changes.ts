/**
 * "What changed" in a session, for the REST routes: daemon-only (unlike the rest of lib/changes, which the
 * plugin bundles too). A spawned session (one with a working-copy record) is read by the diff helper
 * (a container on Docker, a short-lived Pod on Kubernetes: the spawn backend's runner) against its recorded
 * base; a terminal session's plugin is sent a `changes` command and its
 * `command_result` carries the answer. Such an answer is taken out of the event before it is stored: the
 * event log keeps that the command was answered, not a copy of the diff.
 */
import { createEngine, type Engine } from "../../docker/engine.ts";
import { DockerUnreachableError } from "../../docker/errors.ts";
import { runDiffHelper } from "../../docker/diff_helper.ts";
import type { HelperRunner } from "../../docker/helper.ts";
import { MANAGED } from "../../docker/worker.ts";
import {
  ConflictError,
  isDomainError,
  NotFoundError,
  sessionNotFound,
  sessionOffline,
  UnavailableError,
  UpstreamError,
} from "../errors.ts";
import type { Sessions } from "../sessions.ts";
import { type WorkspaceBook, workVolumeName } from "../workspaces.ts";
import type { AgentEvent } from "../protocol.ts";
import { changesFromOutput } from "./mod.ts";
import { CHANGE_LIMITS, type ChangedFile, type Changes, type ChangeScope } from "./types.ts";

/** How long a plugin has to answer `changes` (its git has 20 s). */
export const PLUGIN_CHANGES_TIMEOUT_MS = 30_000;
/** How often a request waiting for a plugin checks that its session is still online. */
const OFFLINE_CHECK_MS = 500;

type CommandResult = Extract<AgentEvent, { type: "command_result" }>;

interface Pending {
  resolve(event: CommandResult): void;
}

export interface SessionChangesDeps {
  sessions: Sessions;
  workspaces: Pick<WorkspaceBook, "get">;
  config: { dockerSock: string; workerImage: string };
  /** Replaces the client on `config.dockerSock` (tests). */
  engine?: Engine;
  /**
   * Where the diff helper runs: the spawn backend's runner (a container, or a Pod on the session's claim),
   * and whether the session's storage is still there. Without it, a container on `config.dockerSock`.
   */
  backend?: { helpers: HelperRunner; workingCopyExists(sessionId: string): Promise<boolean> };
}

/** Computes a session's changes: the diff helper for spawned sessions, the plugin for terminal ones. */
export class SessionChanges {
  #deps: SessionChangesDeps;
  #engine: Engine | undefined;
  #pending = new Map<string, Pending>();
  #running = new Map<string, Promise<Changes>>();

  constructor(deps: SessionChangesDeps) {
    this.#deps = deps;
    this.#engine = deps.engine;
  }

  /**
   * What changed in the session's working copy.
   * @throws {NotFoundError} unknown session; {ConflictError} a terminal session offline, or a working copy
   *   that is gone; {UnavailableError} Docker unreachable; {UpstreamError} git or the plugin failed.
   */
  async changes(sessionId: string, scope: ChangeScope): Promise<Changes> {
    return await this.#compute(sessionId, scope);
  }

  /**
   * One changed file with its whole diff (lockfiles too), within the answer's budget.
   * @throws {NotFoundError} also when the path did not change; else as `changes`.
   */
  async file(sessionId: string, scope: ChangeScope, path: string): Promise<ChangedFile> {
    const answer = await this.#compute(sessionId, scope, path);
    const file = answer.files.find((f) => f.path === path || f.oldPath === path);
    if (!file) throw new NotFoundError(`"${path}" did not change in session "${sessionId}"`);
    return file;
  }

  /**
   * Called for every `command_result` a plugin sends, before it is stored: one answering a `changes`
   * command this daemon waits for is handed over, and comes back without its answer (to be stored as such).
   */
  answered(event: CommandResult): CommandResult {
    const pending = this.#pending.get(event.commandId);
    if (!pending) {
      if (event.changes === undefined) return event;
      const { changes: _changes, ...rest } = event;
      return rest;
    }
    this.#pending.delete(event.commandId);
    pending.resolve(event);
    const { changes: _changes, ...rest } = event;
    return rest;
  }

  /** One computation per session, scope and path at a time: callers asking meanwhile share its answer. */
  #compute(sessionId: string, scope: ChangeScope, path?: string): Promise<Changes> {
    const key = JSON.stringify([sessionId, scope, path ?? null]);
    const running = this.#running.get(key);
    if (running) return running;
    const started = this.#computeOnce(sessionId, scope, path).finally(() => this.#running.delete(key));
    this.#running.set(key, started);
    return started;
  }

  async #computeOnce(sessionId: string, scope: ChangeScope, path?: string): Promise<Changes> {
    if (!this.#deps.sessions.get(sessionId)) throw sessionNotFound(sessionId);
    const workspace = await this.#deps.workspaces.get(sessionId);
    if (!workspace) return await this.#fromPlugin(sessionId, scope, path);
    const backend = this.#deps.backend;
    if (backend) {
      try {
        // A claim or volume that is gone would be made empty (or never mount): say the copy is gone instead.
        if (!await backend.workingCopyExists(sessionId)) {
          throw new ConflictError(`The working copy of session "${sessionId}" is gone`);
        }
        const out = await runDiffHelper(backend.helpers, {
          sessionId,
          scope,
          base: { sha: workspace.baseSha, branch: workspace.baseBranch },
        });
        return changesFromOutput(out.output, out.boundary, { scope, limits: CHANGE_LIMITS, only: path });
      } catch (error) {
        if (isDomainError(error)) throw error;
        throw new UpstreamError(error instanceof Error ? error.message : String(error));
      }
    }
    const engine = this.#engine ??= createEngine({ socketPath: this.#deps.config.dockerSock });
    const volume = workVolumeName(sessionId);
    try {
      const volumes = await engine.volumeList({ ...MANAGED, "lvmh.session": sessionId, "lvmh.kind": "work" });
      // Mounting a missing named volume would create an empty one: say the copy is gone instead.
      if (!volumes.includes(volume)) {
        throw new ConflictError(`The working copy of session "${sessionId}" is gone`);
      }
      const out = await runDiffHelper(engine, {
        image: this.#deps.config.workerImage,
        volume,
        scope,
        base: { sha: workspace.baseSha, branch: workspace.baseBranch },
        labels: { ...MANAGED, "lvmh.repo": workspace.repo, "lvmh.session": sessionId },
      });
      return changesFromOutput(out.output, out.boundary, { scope, limits: CHANGE_LIMITS, only: path });
    } catch (error) {
      if (isDomainError(error)) throw error;
      if (error instanceof DockerUnreachableError) {
        throw new UnavailableError(`Docker is unreachable: ${error.message}`);
      }
      throw new UpstreamError(error instanceof Error ? error.message : String(error));
    }
  }

  async #fromPlugin(sessionId: string, scope: ChangeScope, path?: string): Promise<Changes> {
    const commandId = crypto.randomUUID();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let watch: ReturnType<typeof setInterval> | undefined;
    const answer = new Promise<CommandResult>((resolve, reject) => {
      this.#pending.set(commandId, { resolve });
      timer = setTimeout(() => {
        reject(
          new UpstreamError(`Session "${sessionId}" did not answer within ${PLUGIN_CHANGES_TIMEOUT_MS} ms`),
        );
      }, PLUGIN_CHANGES_TIMEOUT_MS);
      // A plugin that went away will not answer: say so now rather than at the timeout.
      watch = setInterval(() => {
        if (!this.#deps.sessions.isOnline(sessionId)) reject(sessionOffline(sessionId));
      }, OFFLINE_CHECK_MS);
    });
    try {
      // Throws NotFound/Conflict (offline) before anything waits.
      this.#deps.sessions.send(sessionId, { type: "changes", commandId, scope, ...(path ? { path } : {}) });
      const event = await answer;
      if (!event.ok || !event.changes) {
        throw new UpstreamError(event.error ?? `Session "${sessionId}" answered without changes`);
      }
      return event.changes;
    } finally {
      clearTimeout(timer);
      clearInterval(watch);
      this.#pending.delete(commandId);
      answer.catch(() => {});
    }
  }
}
