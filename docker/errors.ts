/**
 * Docker Engine errors by kind, told apart by HTTP status or transport failure, never by message text
 * (moby's `errdefs` shape). Each message is in std style and names what was being done:
 * `Cannot create container "lvmh-sess-a": daemon returned 409: Conflict. …`.
 */

/** Any failure of a Docker Engine call; `status` is the HTTP status, 0 when no answer came. */
export class DockerError extends Error {
  override name = "DockerError";
  constructor(message: string, readonly status: number, readonly engineMessage: string) {
    super(message);
  }
}

/** The engine answered 404: no such container, image or volume. */
export class DockerNotFoundError extends DockerError {
  override name = "DockerNotFoundError";
}

/** The engine answered 409: a name already in use, a volume in use, … */
export class DockerConflictError extends DockerError {
  override name = "DockerConflictError";
}

/** The engine answered 400: an invalid request (bad mount, bad name, failed start). */
export class DockerBadRequestError extends DockerError {
  override name = "DockerBadRequestError";
}

/** No answer from the engine: the socket is missing, refuses, or the call timed out. */
export class DockerUnreachableError extends DockerError {
  override name = "DockerUnreachableError";
}

/** The engine did not answer within the call's time limit (a `wait` on a container that runs on, say). */
export class DockerTimeoutError extends DockerUnreachableError {
  override name = "DockerTimeoutError";
}

/**
 * The one wording for an engine that did not answer at all (socket missing or refusing, call timed out).
 * @param action what was attempted, e.g. `Cannot attach to container "abc"`.
 */
export function unreachable(action: string, socketPath: string, error: unknown): DockerUnreachableError {
  const why = error instanceof Error ? error.message : String(error);
  const timedOut = error instanceof DOMException && error.name === "TimeoutError";
  return new (timedOut ? DockerTimeoutError : DockerUnreachableError)(
    `${action}: cannot reach the Docker engine at unix://${socketPath}: ${why}`,
    0,
    why,
  );
}

/** An image build failed; the engine still answered 200, the error came inside the build stream. */
export class DockerBuildError extends DockerError {
  override name = "DockerBuildError";
}

/**
 * Build the error for a non-2xx engine answer.
 * @param action what was attempted, e.g. `Cannot start container "abc"`.
 * @param status the HTTP status the engine returned.
 * @param body the response text; its JSON `message` is used when present (some errors are plain text).
 */
export function errorFor(action: string, status: number, body: string): DockerError {
  let engineMessage = body.trim();
  try {
    const parsed = JSON.parse(body);
    if (parsed && typeof parsed.message === "string") engineMessage = parsed.message;
  } catch { /* plain-text body, e.g. API version errors */ }
  const message = `${action}: daemon returned ${status}${engineMessage ? `: ${engineMessage}` : ""}`;
  if (status === 404) return new DockerNotFoundError(message, status, engineMessage);
  if (status === 409) return new DockerConflictError(message, status, engineMessage);
  if (status === 400) return new DockerBadRequestError(message, status, engineMessage);
  return new DockerError(message, status, engineMessage);
}
