/**
 * The merge requests' own refusal kind. It is apart from `lib/merge_requests.ts` because the ship steps, the
 * comments and the routes that answer 412 all name it, and none of them should need the whole owner for it.
 */

/** GitLab is not connected. → 412 */
export class NotConnectedError extends Error {
  override name = "NotConnectedError";
  constructor() {
    super("GitLab is not connected: connect it with a token that has the api and write_repository scopes");
  }
}
