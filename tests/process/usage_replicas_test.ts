/**
 * Usage runs are derived by each replica from its copy of the shared log (like the list's glances), so they
 * must go with a session deleted on another replica, as they go with one deleted here. Two daemon processes on
 * one real PostgreSQL database: a session with one counted run, stored as a plugin's holder would store it, is
 * reported by both; deleted through A, it leaves B's report too.
 */
import assert from "node:assert/strict";
import { postgresBinDir, startPostgres } from "../../testing/postgres.ts";
import { type Replica, startReplicas } from "../../testing/replicas.ts";
import { waitFor } from "../../testing/daemon.ts";
import { sessionInfo } from "../../testing/agent.ts";
import { PgEventLog } from "../../lib/storage/pg_event_log.ts";
import type { AgentEvent, SessionInfo } from "../../lib/protocol.ts";
import type { UsageRow } from "../../lib/usage.ts";

const HAVE_POSTGRES = (await postgresBinDir()) !== null;

/** One run of a session, its assistant message spending 120 + 12 tokens, as a holder appends it. */
async function storeRun(log: PgEventLog, id: string): Promise<void> {
  const at = Date.now();
  await log.ensureSession(sessionInfo(id, { startedAt: at - 1000 }) as SessionInfo);
  const epoch = await log.claimHolder(id, "gone-replica");
  const message = { role: "assistant", usage: { inputTokens: 120, outputTokens: 12, totalCost: 0.5 } };
  const events = [
    { type: "agent_start" },
    { type: "message_end", message },
    { type: "agent_end" },
  ].map((e, i) => ({ v: 1, sessionId: id, seq: i + 1, ts: at + i, ...e }) as unknown as AgentEvent);
  await log.append(id, events, { epoch });
}

Deno.test({
  name: "replicas: a session deleted on A leaves B's usage report",
  ignore: !HAVE_POSTGRES,
  fn: async () => {
    await using pg = await startPostgres();
    const url = await pg.newDatabase();
    const log = await PgEventLog.open(url, { max: 2 });
    try {
      await using replicas = await startReplicas(2, { databaseUrl: url });
      const [a, b] = replicas.replicas;
      const api = (r: Replica, path: string, init: RequestInit = {}) =>
        fetch(`${r.url}${path}`, { ...init, headers: { authorization: `Bearer ${replicas.token}` } });
      const bySession = async (r: Replica) =>
        (await (await api(r, "/api/usage?by=session")).json() as UsageRow[]).map((row) =>
          `${row.key}:${row.runs}:${row.inputTokens}`
        ).sort().join();

      await storeRun(log, "gone");
      await storeRun(log, "kept");
      const both = "gone:1:120,kept:1:120";
      for (const r of [a, b]) await waitFor(async () => (await bySession(r)) === both, `${r.id} counts both`);

      const res = await api(a, "/api/sessions/gone", { method: "DELETE" });
      assert.equal(res.status, 200, await res.text());
      for (const r of [a, b]) {
        await waitFor(async () => (await bySession(r)) === "kept:1:120", `${r.id} reports only kept`);
      }
    } finally {
      await log.close();
    }
  },
});
