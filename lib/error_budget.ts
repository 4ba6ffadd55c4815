/**
 * How many `error` frames one socket gets per second. Each refusal is answered so that a peer learns what it
 * did wrong, but a peer that floods refused frames would have the daemon spend its event loop (shared by every
 * session) writing errors nobody reads. Past the budget, a refused event of a plugin's batch is dropped without
 * an answer until the next second, and a refused frame closes its socket (lib/agent_conn.ts, lib/browser_conn.ts).
 * A plugin with a bad event now and then never comes near it.
 */
export const ERROR_FRAMES_PER_SECOND = 20;

/** @returns a function that says whether one more error frame may be sent now. */
export function errorBudget(
  perSecond = ERROR_FRAMES_PER_SECOND,
  now = () => performance.now(),
): () => boolean {
  let windowStart = -Infinity;
  let sent = 0;
  return () => {
    const t = now();
    if (t - windowStart >= 1000) {
      windowStart = t;
      sent = 0;
    }
    return ++sent <= perSecond;
  };
}
