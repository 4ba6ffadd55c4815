/**
 * What the spawn pipeline needs from wherever workers run. The Docker engine (`docker_backend.ts`) is the one
 * implementation; a Kubernetes one would map a worker to a pod and a workspace to a volume claim, and nothing
 * else in `lib/spawn/` would change. Backends throw the kinds of `lib/errors.ts` (UnavailableError when they
 * cannot be reached, UpstreamError when they answered but failed the work, NotFoundError), never their own.
 */
import { UpstreamError } from "../errors.ts";

/** One session's worker: what it runs on and how it reaches the daemon. */
export interface WorkerRequest {
  sessionId: string;
  repo: string;
  branch: string | null;
  /** The agent socket URL the worker dials. */
  agentUrl: string;
  /** The session-scoped token the worker's plugin presents. */
  token: string;
}

/** The repository a session works on and how to fetch it. */
export interface WorkspaceRequest {
  repo: string;
  branch: string | null;
  /** Clone URL without credentials. */
  url: string;
  /** Secret for the clone, or null for an anonymous one; never put where other processes can read it. */
  credential: string | null;
}

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
   * Create (not start) a session's worker with its session storage and the repo's workspace storage.
   * @returns the worker's id.
   * @throws {ImageMissingError} when the image is gone; {UpstreamError} otherwise.
   */
  createWorker(request: WorkerRequest): Promise<string>;
  /** Start a created worker. @throws {RetryableError} for a hiccup worth one more try; {UpstreamError}. */
  startWorker(id: string): Promise<void>;
  /**
   * Clone or update the repository in its workspace. Callers serialise calls for one repository.
   * @throws {UpstreamError} with git's message.
   */
  prepareWorkspace(request: WorkspaceRequest): Promise<void>;
  /** Tell a started worker its workspace is ready (it opens its session then). @throws {UpstreamError} */
  signalReady(id: string): Promise<void>;
  /** Remove a worker, running or not (a half-made one after a failed spawn). Never throws. */
  removeWorker(id: string): Promise<void>;
  /** Remove a session's own storage (not the repository's workspace). Never throws. */
  removeSessionStorage(sessionId: string): Promise<void>;
  /**
   * Stop and remove every worker of a session and its storage (the workspace stays).
   * @throws {NotFoundError} when the session has no worker.
   */
  stopSession(sessionId: string): Promise<void>;
  /** Every worker lvmh runs here, found by label. */
  listWorkers(): Promise<ManagedWorker[]>;
  /** Remove what a crashed daemon left behind mid-spawn (clone helpers). Never throws. */
  sweep(): Promise<void>;
}

/** A failure that a second try is likely to get past (the pipeline tries once more with a fresh worker). */
export class RetryableError extends UpstreamError {
  override name = "RetryableError";
}

/** The worker image vanished (removed by hand): the pipeline checks the image again on the next spawn. */
export class ImageMissingError extends UpstreamError {
  override name = "ImageMissingError";
}
