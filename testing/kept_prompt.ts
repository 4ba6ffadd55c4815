/**
 * Test helpers for kept hook prompts (`hook_prompts`): write one into a stopped daemon's database (the row a
 * spawn hook's 202 leaves once its worker started, without needing an engine), read what is kept, keep the
 * daemon from dropping a row (so a test can kill it after a prompt's answer was stored but before its row
 * went), and a loopback relay between a plugin and the daemon that catches the moment a kept prompt's frame leaves the
 * daemon, so a test can SIGKILL the daemon in that window.
 */
import { DatabaseSync } from "node:sqlite";
import { sharedRowsSync, TEST_STORE_POSTGRES } from "./test_store.ts";

/** Keep a prompt for `sessionId` in the database under `dataDir` (its daemon stopped, its schema made). */
export function keepPrompt(
  dataDir: string,
  sessionId: string,
  message: string,
  id: string = crypto.randomUUID(),
): string {
  const db = new DatabaseSync(`${dataDir}/lvmh.db`);
  try {
    db.prepare(
      `INSERT INTO hook_prompts(id, session_id, message, deliver_as, actor, detail, spawn, created_at)
       VALUES (?, ?, ?, 'steer', 'hook:generic', '{}', NULL, ?)`,
    ).run(id, sessionId, message, Date.now());
  } finally {
    db.close();
  }
  return id;
}

/**
 * While on (set in a stopped daemon's database), the daemon cannot delete a kept prompt: its delete fails as a
 * write error would, after the prompt's answer was stored, which leaves the state a kill between the two
 * writes leaves. Off again before the daemon that should drop rows starts.
 */
export function holdKeptRows(dataDir: string, on: boolean): void {
  const db = new DatabaseSync(`${dataDir}/lvmh.db`);
  try {
    db.exec(
      on
        ? `CREATE TRIGGER IF NOT EXISTS test_hold_kept BEFORE DELETE ON hook_prompts
           BEGIN SELECT RAISE(ABORT, 'test: kept rows are held'); END`
        : "DROP TRIGGER IF EXISTS test_hold_kept",
    );
  } finally {
    db.close();
  }
}

/**
 * The ids of the prompts kept for the daemon under `dataDir` (read while the daemon runs): in its file, or with
 * `LVMH_TEST_STORE=postgres` in its shared database, where a replica keeps them (a prompt `keepPrompt` wrote
 * into the file goes there at the daemon's start).
 */
export function keptIds(dataDir: string): string[] {
  return keptRows(dataDir).map((r) => r.id);
}

/** The prompts kept for the daemon under `dataDir`, as `keptIds` finds them: id, session, spawn. */
export function keptRows(dataDir: string): { id: string; sessionId: string; spawn: string | null }[] {
  if (TEST_STORE_POSTGRES) {
    return sharedRowsSync(dataDir, "SELECT id, session_id, coalesce(spawn, '') FROM hook_prompts").map((
      [id, sessionId, spawn],
    ) => ({ id, sessionId, spawn: spawn || null }));
  }
  const db = new DatabaseSync(`${dataDir}/lvmh.db`, { readOnly: true });
  try {
    return db.prepare("SELECT id, session_id AS sessionId, spawn FROM hook_prompts").all() as {
      id: string;
      sessionId: string;
      spawn: string | null;
    }[];
  } finally {
    db.close();
  }
}

/** Make the prompts kept for `sessionId` look `ageMs` old (the daemon under `dataDir` stopped). */
export function ageKeptPrompts(dataDir: string, sessionId: string, ageMs: number): void {
  const at = Date.now() - ageMs;
  if (TEST_STORE_POSTGRES) {
    // Ids are uuids: nothing to quote.
    sharedRowsSync(dataDir, `UPDATE hook_prompts SET created_at = ${at} WHERE session_id = '${sessionId}'`);
    return;
  }
  const db = new DatabaseSync(`${dataDir}/lvmh.db`);
  try {
    db.prepare("UPDATE hook_prompts SET created_at = ? WHERE session_id = ?").run(at, sessionId);
  } finally {
    db.close();
  }
}

/**
 * A TCP relay on loopback to the daemon's `port` (kept across restarts). Armed with a marker (a promptId),
 * it watches the daemon → plugin bytes (server frames are not masked, so the JSON is readable) for it; when it
 * passes, the plugin → daemon direction stops at once (nothing the plugin answers reaches this daemon), the
 * chunk holding it is dropped (`drop`: the frame never reaches the plugin) or delivered (`deliver`), and
 * `onCaught` runs (the test kills the daemon there). Connections made after that pass through untouched.
 */
export function promptRelay(port: number) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const open = new Set<Deno.Conn>();
  let armed: { marker: string; mode: "drop" | "deliver"; caught: () => void } | null = null;
  const closeAll = (conns: Iterable<Deno.Conn>) => {
    for (const c of conns) {
      try {
        c.close();
      } catch { /* closed */ }
      open.delete(c);
    }
  };
  const serve = async (plugin: Deno.Conn, daemon: Deno.Conn) => {
    let upstreamCut = false;
    const up = (async () => {
      const buf = new Uint8Array(64 * 1024);
      for (;;) {
        const n = await plugin.read(buf).catch(() => null);
        if (n === null || upstreamCut) break;
        await daemon.write(buf.subarray(0, n)).catch(() => {});
      }
    })();
    const down = (async () => {
      const dec = new TextDecoder();
      const buf = new Uint8Array(64 * 1024);
      let tail = "";
      for (;;) {
        const n = await daemon.read(buf).catch(() => null);
        if (n === null) break;
        const chunk = buf.slice(0, n);
        const text = tail + dec.decode(chunk, { stream: true });
        tail = text.slice(-200);
        const a = armed;
        if (a && text.includes(a.marker)) {
          armed = null;
          upstreamCut = true;
          if (a.mode === "deliver") await plugin.write(chunk).catch(() => {});
          a.caught();
          break;
        }
        await plugin.write(chunk).catch(() => {});
      }
    })();
    await Promise.race([up, down]);
    closeAll([plugin, daemon]);
    await Promise.allSettled([up, down]);
  };
  const accepting = (async () => {
    for await (const conn of listener) {
      try {
        const daemon = await Deno.connect({ hostname: "127.0.0.1", port });
        open.add(conn).add(daemon);
        void serve(conn, daemon);
      } catch {
        conn.close(); // the daemon is down: the plugin retries
      }
    }
  })().catch(() => {});
  return {
    agentUrl: `ws://127.0.0.1:${(listener.addr as Deno.NetAddr).port}/agent/ws`,
    /** Resolves once the frame holding `marker` passed (dropped or delivered) and every link was cut. */
    arm(marker: string, mode: "drop" | "deliver"): Promise<void> {
      return new Promise((resolve) => {
        armed = {
          marker,
          mode,
          caught: () => {
            closeAll([...open]);
            resolve();
          },
        };
      });
    },
    async close() {
      listener.close();
      closeAll([...open]);
      await accepting;
    },
  };
}

/** A request body pi sent the fake LLM (the OpenAI chat shape). */
type LlmRequest = { messages: { role: string; content: unknown }[] };

/** The user messages of the last conversation pi sent the LLM. */
export function lastUserTexts(requests: readonly unknown[]): string[] {
  const last = requests.at(-1) as LlmRequest | undefined;
  return (last?.messages ?? []).filter((m) => m.role === "user").map((m) =>
    typeof m.content === "string"
      ? m.content
      : (m.content as { type: string; text?: string }[]).map((p) => p.text ?? "").join("")
  );
}
