/**
 * Retention runs once across replicas: two daemon processes on one real PostgreSQL database with
 * `LVMH_RETENTION_DAYS=1`. One leads (it says so); only the leader deletes sessions idle for ten days, the other
 * keeps them in its copy while it follows; the leader SIGKILLed, the other leads within a deadline and deletes
 * what is left. Each old session is deleted once in all, a recent one stays.
 */
import assert from "node:assert/strict";
import { postgresBinDir, startPostgres } from "../../testing/postgres.ts";
import { type Replica, startReplicas } from "../../testing/replicas.ts";
import { waitFor } from "../../testing/daemon.ts";
import { sessionInfo } from "../../testing/agent.ts";
import { PgEventLog } from "../../lib/storage/pg_event_log.ts";
import type { AgentEvent, SessionInfo, SessionSummary } from "../../lib/protocol.ts";

const HAVE_POSTGRES = (await postgresBinDir()) !== null;
const DAY = 24 * 3600_000;
/** The leader's connection ends with its process: the other's next round (1 s) takes over. */
const TAKEOVER_DEADLINE_MS = 10_000;

/** A session as a plugin on some replica stored it, its last event `ageMs` ago. */
async function storeSession(log: PgEventLog, id: string, ageMs: number): Promise<void> {
  const at = Date.now() - ageMs;
  await log.ensureSession(sessionInfo(id, { startedAt: at - 1000 }) as SessionInfo);
  const epoch = await log.claimHolder(id, "gone-replica");
  const event = { v: 1, sessionId: id, seq: 1, ts: at, type: "agent_start" } as unknown as AgentEvent;
  await log.append(id, [event], { epoch });
}

/** The number of sessions each of the replica's retention lines says it deleted. */
const deleted = (r: Replica) =>
  [...r.daemon().output().matchAll(/lvmh: deleted (\d+) session/g)].map((m) => Number(m[1]));
const leads = (r: Replica) => r.daemon().output().includes(`replica ${r.id} leads`);

Deno.test({
  name: "replicas: retention deletes old sessions once, on the leader; the other leads after a SIGKILL",
  ignore: !HAVE_POSTGRES,
  fn: async () => {
    await using pg = await startPostgres();
    const url = await pg.newDatabase();
    const log = await PgEventLog.open(url, { max: 2 });
    try {
      await storeSession(log, "old-1", 10 * DAY);
      await storeSession(log, "old-2", 10 * DAY);
      await storeSession(log, "recent", 1000);
      await using replicas = await startReplicas(2, { databaseUrl: url, env: { LVMH_RETENTION_DAYS: "1" } });
      const ids = async (r: Replica) => {
        const res = await fetch(`${r.url}/api/sessions`, {
          headers: { authorization: `Bearer ${replicas.token}` },
        });
        return ((await res.json()) as SessionSummary[]).map((s) => s.id).sort().join();
      };
      const leader = await waitFor(
        () => replicas.replicas.find(leads),
        "a replica leads",
        TAKEOVER_DEADLINE_MS,
      );
      const other = replicas.replicas.find((r) => r !== leader)!;
      assert.equal(leads(other), false, "exactly one leads");

      // The follower copies every session, old ones too, and deletes none; a session that is old from the
      // start is kept until a leader's round.
      await storeSession(log, "old-3", 10 * DAY);
      await waitFor(async () => (await ids(other)).includes("old-3"), `${other.id} copies old-3`, 15_000);
      assert.deepEqual(deleted(other), [], "the follower deletes nothing");

      const byLeader = deleted(leader);
      await leader.kill("SIGKILL");
      const killedAt = performance.now();
      await waitFor(() => leads(other), `${other.id} leads after the SIGKILL`, TAKEOVER_DEADLINE_MS);
      console.log(`${other.id} led ${(performance.now() - killedAt).toFixed(0)} ms after the SIGKILL`);
      await waitFor(async () => (await ids(other)) === "recent", `${other.id} lists the recent one only`);
      // The registry deletes its copy's row at once and the shared row right after.
      await waitFor(
        async () => (await log.sessions()).map((s) => s.id).join() === "recent",
        "the shared rows: old ones gone",
      );
      const byOther = deleted(other);
      const total = [...byLeader, ...byOther].reduce((a, b) => a + b, 0);
      assert.equal(
        total,
        3,
        `each old session deleted once: ${leader.id} ${byLeader}, ${other.id} ${byOther}`,
      );
    } finally {
      await log.close();
    }
  },
});
