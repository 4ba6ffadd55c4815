/**
 * What the spawn pipeline needs from wherever workers run. The Docker engine (`docker_backend.ts`) is the one
 * implementation; a Kubernetes one would map a worker to a pod and the repository cache and each session's
 * working copy to volume claims, and nothing else in `lib/spawn/` would change. Backends throw the kinds of
 * `lib/errors.ts` (UnavailableError when they cannot be reached, UpstreamError when they answered but failed
 * the work, NotFoundError), never their own.
 *
 * Storage: one cache per repository (cloned, then fetched; only that step holds the clone credential) and one
 * working copy per session, made from the cache without the network, on the session's own branch. A worker
 * sees its own working copy and session storage, never the cache nor another session's copy, so a later
 * fetch never moves files under a running agent.
 */
import { ConflictError, UpstreamError } from "../errors.ts";
import type { HelperRunner } from "../../docker/helper.ts";

/** One session's worker: what it runs on and how it reaches the daemon. */
export interface WorkerRequest {
  sessionId: string;
  repo: string;
  branch: string | null;
  /** The agent socket URL the worker dials. */
  agentUrl: string;
  /** The session-scoped token the worker's plugin presents. */
  token: string;
  /** A stopped session's new worker (its bridge says so when pi had saved nothing). */
  resume?: boolean;
  /** For a backend whose worker makes its own working copy (`awaitStart`): what to clone, onto which branch. */
  clone?: { url: string; baseBranch: string | null; baseSha: string | null; branch: string };
}

/** The repository whose cache to clone or fetch, and how. */
export interface CacheRequest {
  repo: string;
  /** Clone URL without credentials. */
  url: string;
  /** Secret for the clone, or null for an anonymous one; never put where other processes can read it. */
  credential: string | null;
}

/** A session's working copy to make from its repository's cache. */
export interface WorkingCopyRequest {
  sessionId: string;
  repo: string;
  /** The URL the copy's `origin` names (without credentials). */
  url: string;
  /** The branch to start from; null for the repository's default branch. */
  baseBranch: string | null;
  /** The commit to start from, else the branch's head (a session spawned again keeps its recorded base). */
  baseSha: string | null;
  /** The session's own branch, created at the base. */
  branch: string;
}

/** What making a working copy did: its base, or `kept` when the session's copy was already there. */
export type WorkingCopy = { kept: true } | { kept: false; baseBranch: string; baseSha: string };

/** A worker the backend runs for lvmh, as found by its labels. */
export interface ManagedWorker {
  id: string;
  sessionId: string;
  repo: string;
  /** Running (or restarting), as opposed to exited or created. */
  running: boolean;
  /** Epoch milliseconds. */
  createdAt: number;
}

/** Starts, finds and removes session workers. Every method may throw UnavailableError. */
export interface SpawnBackend {
  /** Check the backend answers at all. @throws {UnavailableError} */
  ping(): Promise<void>;
  /** Whether the worker image is there and built from the current sources. */
  imageCurrent(): Promise<boolean>;
  /** Build the worker image. @throws {UpstreamError} with the builder's message. */
  buildImage(): Promise<void>;
  /**
   * Create a session's storage: its session volume and its (empty) working copy, labelled as the session's.
   * @throws {UpstreamError}
   */
  createStorage(request: { sessionId: string; repo: string }): Promise<void>;
  /**
   * Create (not start) a session's worker on its storage (`createStorage` first).
   * @returns the worker's id.
   * @throws {ImageMissingError} when the image is gone; {UpstreamError} otherwise.
   */
  createWorker(request: WorkerRequest): Promise<string>;
  /** Start a created worker. @throws {RetryableError} for a hiccup worth one more try; {UpstreamError}. */
  startWorker(id: string): Promise<void>;
  /**
   * Clone the repository into its cache, or fetch into it. Callers serialise cache work per repository.
   * @throws {UpstreamError} with git's message.
   */
  refreshCache(request: CacheRequest): Promise<void>;
  /**
   * Fill a session's working copy from the cache, without the network and without the credential. Callers
   * hold the repository's lock (the cache must not change meanwhile).
   * @throws {UpstreamError} with git's message (an unknown branch).
   */
  makeWorkingCopy(request: WorkingCopyRequest): Promise<WorkingCopy>;
  /** Tell a started worker its working copy is ready (it opens its session then). @throws {UpstreamError} */
  signalReady(id: string): Promise<void>;
  /** Remove a worker, running or not (a half-made one after a failed spawn). Never throws. */
  removeWorker(id: string): Promise<void>;
  /** Remove a session's own storage, its working copy included (not the repository's cache). Never throws. */
  removeSessionStorage(sessionId: string): Promise<void>;
  /** Whether both of a session's volumes (its working copy and its session storage) are still there. */
  storageExists(sessionId: string): Promise<boolean>;
  /** Whether a session's working copy is still there (what the changes, bundle and ship helpers read). */
  workingCopyExists(sessionId: string): Promise<boolean>;
  /**
   * Stop and remove every worker of a session; its storage stays, so the session can be resumed.
   * @returns the last worker's last log lines (up to `MAX_LOG_LINES`), read before it was removed.
   * @throws {NotFoundError} when the session has no worker.
   */
  stopSession(sessionId: string): Promise<string>;
  /**
   * A session's work as a git bundle: `branch` at the working copy's head, plus one commit of the
   * uncommitted changes on top; made without the network and the credential, writing nothing in the copy.
   * @throws {UpstreamError} with git's message (no commit, the base rewritten away).
   */
  bundle(sessionId: string, o: { baseSha: string; branch: string; message: string }): Promise<Uint8Array>;
  /**
   * Runs the git helpers (changes, export, bundle, push) beside a session's working copy: containers on
   * Docker, short-lived Pods on the session's claim on Kubernetes.
   */
  readonly helpers: HelperRunner;
  /** How a worker is: running, or how it ended; null when it is gone. */
  workerStatus(id: string): Promise<{ running: boolean; exitCode: number; oom: boolean } | null>;
  /** A worker's last `tail` log lines, stdout and stderr together. @throws {NotFoundError} when it is gone. */
  workerLogs(id: string, tail: number): Promise<string>;
  /** Every worker lvmh runs here, found by label. */
  listWorkers(): Promise<ManagedWorker[]>;
  /** Remove what a crashed daemon left behind mid-spawn (fetch and copy helpers). Never throws. */
  sweep(): Promise<void>;
  /**
   * Only on backends whose worker makes its own working copy (Kubernetes: an init container clones into the
   * session's claim, so `refreshCache`, `makeWorkingCopy` and `signalReady` are not used): wait until a
   * created worker runs, telling `progress` each state it passes.
   * @throws {UpstreamError} with the reason it will not run (the clone's message, an image pull error).
   */
  awaitStart?(
    id: string,
    progress: (state: "queued" | "cloning" | "starting", message: string | null) => void,
  ): Promise<void>;
  /**
   * The clone credential for a session whose worker is cloning, handed out once (`GET
   * /agent/clone-credential`); null when there is none to hand out, `{credential: null}` for an anonymous
   * clone.
   */
  takeCloneCredential?(sessionId: string): CloneCredential | null;
  /** Stop background work (a watch) and cut the calls in flight: the daemon stops. */
  close?(): Promise<void>;
}

/**
 * What `GET /agent/clone-credential` hands out once: the GitLab token (null: anonymous), and for a helper Pod
 * the files it needs (a bundle to push), base64.
 */
export interface CloneCredential {
  credential: string | null;
  files?: { path: string; data: string }[];
}

/** The most log lines a worker's logs are read (and kept) with. */
export const MAX_LOG_LINES = 1000;

/** A failure that a second try is likely to get past (the pipeline tries once more with a fresh worker). */
export class RetryableError extends UpstreamError {
  override name = "RetryableError";
}

/** The worker image vanished (removed by hand): the pipeline checks the image again on the next spawn. */
export class ImageMissingError extends UpstreamError {
  override name = "ImageMissingError";
}

/** A stopped session's storage is gone (removed by hand, or by the engine's prune): it cannot be resumed. */
export class StorageGoneError extends ConflictError {
  override name = "StorageGoneError";
}
