/**
 * Domain errors by kind. Domain code throws these (or built-ins); `lib/http.ts` maps each kind to one HTTP
 * status in one place. Messages are safe to show the caller, in std style: `Session "a1" is offline`.
 */

/** A named thing that does not exist (session, job, container, approval, token). → 404 */
export class NotFoundError extends Error {
  override name = "NotFoundError";
}

/** The request clashes with the current state (session offline or online, decision already taken). → 409 */
export class ConflictError extends Error {
  override name = "ConflictError";
}

/** The caller's input is not acceptable (rejected by a validator or by a peer such as GitLab). → 400 */
export class InvalidError extends Error {
  override name = "InvalidError";
}

/** The caller is known but may not do this. → 403 */
export class ForbiddenError extends Error {
  override name = "ForbiddenError";
}

/** The input is larger than the daemon takes (an image, a prompt's images together, a body). → 413 */
export class TooLargeError extends Error {
  override name = "TooLargeError";
}

/**
 * A dependency the daemon needs (Docker, GitLab, the SQLite file while it refuses writes) cannot be used at
 * all. → 503
 */
export class UnavailableError extends Error {
  override name = "UnavailableError";
}

/** A dependency answered, but failed the work (image build, clone, container start). → 502 */
export class UpstreamError extends Error {
  override name = "UpstreamError";
}

/** True for any of the kinds above: an error whose message and status are already chosen. */
export function isDomainError(error: unknown): error is Error {
  return error instanceof NotFoundError || error instanceof ConflictError || error instanceof InvalidError ||
    error instanceof ForbiddenError || error instanceof TooLargeError || error instanceof UnavailableError ||
    error instanceof UpstreamError;
}

/** The one wording for an unknown session id. */
export function sessionNotFound(sessionId: string): NotFoundError {
  return new NotFoundError(`Session "${sessionId}" does not exist`);
}

/** The one wording for a session with no live plugin socket. */
export function sessionOffline(sessionId: string): ConflictError {
  return new ConflictError(`Session "${sessionId}" is offline`);
}
