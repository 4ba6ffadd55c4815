/** Which session a hook about a repository and branch is for: a query over the spawner's jobs and the sessions. */
import type { Sessions } from "../sessions.ts";
import type { Spawner } from "../spawner.ts";

/**
 * The online session working on `repo` (and `branch` when given): spawned jobs first, where lvmh knows the
 * branch; then sessions that report that repository. Null when none.
 */
export function findSession(
  deps: { sessions: Sessions; spawner: Spawner },
  repo: string,
  branch: string | null,
): string | null {
  const online = (id: string) => deps.sessions.get(id)?.online === true;
  for (const job of deps.spawner.jobs()) {
    if (job.repo !== repo || job.state !== "running") continue;
    if (branch !== null && job.branch !== null && job.branch !== branch) continue;
    if (online(job.sessionId)) return job.sessionId;
  }
  for (const s of deps.sessions.list()) {
    if (!s.online || !s.repo) continue;
    const r = s.repo.replace(/\.git$/, "");
    if (r === repo || r.endsWith(`/${repo}`) || r.endsWith(`:${repo}`)) return s.id;
  }
  return null;
}
