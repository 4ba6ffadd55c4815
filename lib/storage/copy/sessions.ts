/**
 * Sessions, their events and their commands: the counters on the session row (last seq, last command position)
 * are set from the copied rows, so appends and commands made on Postgres continue after them.
 */
import type { DatabaseSync } from "node:sqlite";
import type { Sql } from "../pg_client.ts";
import { type Check, type Copier, countCheck, sqliteColumns, sqliteHas, type Tx } from "./copier.ts";
import { copyTable } from "./table_copy.ts";

/** Events per unnest INSERT (five arrays, one round trip). */
const EVENT_BATCH = 5_000;

/** Each session's highest stored seq, as "id seq" lines in id order. */
function sqliteLastSeqs(src: DatabaseSync): string[] {
  return (src.prepare(
    "SELECT sessionId AS id, max(seq) AS seq FROM events GROUP BY sessionId ORDER BY sessionId",
  )
    .all() as { id: string; seq: number }[]).map((r) => `${r.id} ${r.seq}`);
}

async function pgLastSeqs(sql: Sql): Promise<string[]> {
  const rows = await sql`SELECT session_id AS id, max(seq) AS seq FROM events GROUP BY session_id
    ORDER BY session_id COLLATE "C"`;
  return rows.map((r) => `${r.id} ${r.seq}`);
}

const lastSeqCheck: Check = {
  label: "events: last seq (sum over sessions)",
  sqlite: (src) => sqliteLastSeqs(src).reduce((n, line) => n + Number(line.split(" ").at(-1)), 0),
  pg: async (sql) => (await pgLastSeqs(sql)).reduce((n, line) => n + Number(line.split(" ").at(-1)), 0),
  // The sum is what is printed; every session's own last seq is what must agree.
  same: async (src, sql) => {
    const [a, b] = [sqliteLastSeqs(src), await pgLastSeqs(sql)];
    return a.length === b.length && a.every((line, i) => line === b[i]);
  },
};

/** The session row's counter must equal its last seq: the copied last seq may not trail the events. */
const counterCheck: Check = {
  label: "sessions: counter behind last seq",
  sqlite: () => 0,
  pg: async (sql) =>
    Number(
      (await sql`SELECT count(*)::bigint AS n FROM sessions s WHERE s.last_seq <>
        greatest(coalesce((SELECT max(seq) FROM events e WHERE e.session_id = s.id), 0), s.last_seq)`)[0].n,
    ),
};

export const sessionsCopier: Copier = {
  kind: "sessions",
  sqliteTables: ["sessions", "command_counters"],
  pgTables: ["sessions"],
  async copy(src, tx) {
    const counters = sqliteHas(src, "command_counters");
    const commands = sqliteHas(src, "commands");
    const cmdPos = [
      counters ? "(SELECT lastPos FROM command_counters c WHERE c.sessionId = sessions.id)" : "0",
      commands ? "(SELECT max(pos) FROM commands c WHERE c.sessionId = sessions.id)" : "0",
    ];
    await copyTable(src, tx, {
      from: "sessions",
      to: "sessions",
      columns: {
        // The daemon resets lastSeq to the highest stored seq when it opens the file; the greater of the two
        // keeps a new append from reusing a seq either side has seen.
        last_seq:
          "max(lastSeq, COALESCE((SELECT max(seq) FROM events e WHERE e.sessionId = sessions.id), 0))",
        // A stopped daemon's sessions are offline, and idle as its next start would make them.
        state: "'idle'",
        ask: sqliteColumns(src, "sessions").includes("ask") ? "ask" : null,
        last_cmd_pos: `max(COALESCE(${cmdPos[0]}, 0), COALESCE(${cmdPos[1]}, 0))`,
        // No holder: the first replica a plugin reaches takes the session with a new epoch.
        holder: null,
        holder_epoch: null,
      },
      // A column of the first release, no longer written: a session is online while its socket is.
      dropped: ["online"],
    });
  },
  checks: [countCheck("sessions"), counterCheck],
};

export const eventsCopier: Copier = {
  kind: "events",
  sqliteTables: ["events"],
  pgTables: ["events"],
  async copy(src, tx) {
    // unnest keeps a batch to one statement with five parameters, whatever its size (as pg_append.ts does).
    const select = src.prepare(
      "SELECT sessionId, seq, ts, type, payload FROM events ORDER BY sessionId, seq",
    );
    let cols: [string[], number[], number[], string[], string[]] = [[], [], [], [], []];
    const flush = async () => {
      if (cols[0].length === 0) return;
      await tx`INSERT INTO events(session_id, seq, ts, type, payload)
        SELECT * FROM unnest(${cols[0]}::text[], ${cols[1]}::bigint[], ${cols[2]}::bigint[], ${
        cols[3]
      }::text[],
          ${cols[4]}::text[])`;
      cols = [[], [], [], [], []];
    };
    for (const r of select.iterate() as Iterable<Record<string, string & number>>) {
      cols[0].push(r.sessionId), cols[1].push(r.seq), cols[2].push(r.ts), cols[3].push(r.type);
      cols[4].push(r.payload);
      if (cols[0].length === EVENT_BATCH) await flush();
    }
    await flush();
  },
  checks: [countCheck("events"), lastSeqCheck],
};

export const commandsCopier: Copier = {
  kind: "commands",
  sqliteTables: ["commands"],
  pgTables: ["commands"],
  // Waiting commands keep their taken epoch: one taken by the stopped daemon is sent again marked as a repeat,
  // as after a holder change. SQLite's trigger removed a deleted session's commands, as Postgres's cascade does.
  copy: async (src: DatabaseSync, tx: Tx) => {
    await copyTable(src, tx, { from: "commands", to: "commands" });
  },
  checks: [countCheck("commands")],
};
