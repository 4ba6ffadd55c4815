/**
 * Fault harness helper: a fleet of real plugin instances (the plugin module under a host that drives it like
 * pi) that each fire numbered user messages, the audit of what the daemon stored for them afterwards, and the
 * tail the disk-fault rows share (`finishScenario`).
 */
import { type Daemon, waitFor } from "../../testing/daemon.ts";
import { type FakePi, fakePi } from "../../testing/fake_pi.ts";
import { allEvents } from "../../testing/pi.ts";
import { createLvmhAgent } from "../../plugin/lvmh-agent.mjs";
import type { Witness, WitnessEnd } from "./_witness.ts";

export interface Fleet {
  ids: string[];
  /** Messages fired per plugin so far. */
  sent(): number;
  /** One message from every plugin (`pad` characters of text each), then the pause pi leaves between events. */
  round(pad?: number): Promise<void>;
  /** Wait until SQLite holds every fired message of every plugin, then count holes and duplicates. */
  audit(d: Pick<Daemon, "api">, timeoutMs?: number): Promise<Audit>;
  stop(): Promise<void>;
}

export interface Audit {
  sent: number;
  stored: number;
  lost: number;
  duplicated: number;
}

/** Start `n` plugins named `${prefix}-${i}` against `d`; resolves once each fired session_start. */
export async function startFleet(d: Pick<Daemon, "agentUrl" | "token">, prefix: string, n: number) {
  const home = await Deno.makeTempDir({ prefix: `lvmh-faults-${prefix}-home-` });
  const ids = Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
  const pis: FakePi[] = ids.map((id) => {
    const pi = fakePi(id, { cwd: home });
    createLvmhAgent({ url: d.agentUrl, token: d.token, home })(pi.pi);
    return pi;
  });
  await Promise.all(pis.map((p) => p.fire("session_start", { reason: "startup" })));
  let sent = 0;
  const fleet: Fleet = {
    ids,
    sent: () => sent,
    async round(pad = 0) {
      const filler = "x".repeat(pad);
      for (const [n, p] of pis.entries()) {
        const text = `message ${sent} of ${ids[n]} ${filler}`;
        p.fireTimed("message_end", {
          message: { role: "user", content: [{ type: "text", text }], timestamp: Date.now() },
        });
      }
      sent++;
      await new Promise((r) => setTimeout(r, 5)); // pi awaits between events
    },
    async audit(daemon, timeoutMs = 60_000) {
      const read = () => Promise.all(ids.map((id) => allEvents(daemon, id)));
      // A hole that never fills is a result (lost events), not an error: count what is there at the deadline.
      const all = await waitFor(
        async () => {
          const evs = await read();
          const users = evs.map((e) => e.filter((x) => x.type === "message_end"));
          return users.every((u) => u.length >= sent) ? evs : null;
        },
        "every message stored",
        timeoutMs,
      ).catch(read);
      let stored = 0, duplicated = 0, lost = 0;
      for (const evs of all) {
        const seqs = evs.map((e) => e.seq as number);
        const unique = new Set(seqs);
        duplicated += seqs.length - unique.size;
        for (let s = 1; s <= Math.max(...seqs); s++) if (!unique.has(s)) lost++;
        const texts = evs.filter((e) => e.type === "message_end").map((e) => JSON.stringify(e.message));
        duplicated += texts.length - new Set(texts).size; // one message stored under two seqs
        stored += texts.length;
      }
      const total = sent * ids.length;
      return { sent: total, stored, lost: lost + Math.max(0, total - stored), duplicated };
    },
    async stop() {
      await Promise.all(pis.map((p) => p.fire("session_shutdown", { reason: "quit" }).catch(() => {})));
      await Deno.remove(home, { recursive: true }).catch(() => {});
      // The plugin's batched seq and log writes may land just after shutdown.
      await new Promise((r) => setTimeout(r, 400));
      await Deno.remove(home, { recursive: true }).catch(() => {});
    },
  };
  return fleet;
}

/** Commits the daemon logged as refused for `cause`, and the plugin sockets it closed for them. */
export function refused(output: string, cause: string): { commits: number; sockets: number } {
  let commits = 0, sockets = 0;
  for (const line of output.split("\n")) {
    if (!line.startsWith("lvmh: cannot store") || !line.includes(cause)) continue;
    commits++;
    sockets += Number(/(\d+) plugin socket\(s\) closed/.exec(line)?.[1] ?? 0);
  }
  return { commits, sockets };
}

/** What every disk-fault row reports once the fault is over. */
export interface ScenarioEnd {
  /** The hand-written socket: how the daemon closed it, and the highest seq SQLite held then. */
  witness: WitnessEnd & { storedAtClose: number; contiguous: boolean };
  /** Log lines of commits refused for the row's cause. */
  failedCommits: number;
  /** Plugin sockets closed without an ack for those commits. */
  socketsClosed: number;
  audit: Audit;
  /** From the repair (the fault's end) until every message was stored. */
  repairSeconds: number;
  /** The daemon still answers REST. */
  alive: boolean;
}

/**
 * The tail of a disk-fault row: the witness's end (reported "still open" after 15 s), what SQLite holds of
 * its session, the commits and sockets refused for `cause`; then the repair (`repair.run`, if the row has one
 * left to do), the fleet's audit, and whether the daemon still answers. `output`: the daemon's output when
 * the refusals were counted.
 */
export async function finishScenario(
  d: Pick<Daemon, "api" | "output">,
  fleet: Fleet,
  witness: { id: string; w: Witness },
  cause: string,
  repair: { since?: number; run?: () => Promise<unknown> },
): Promise<{ end: ScenarioEnd; output: string }> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const end = await Promise.race([
    witness.w.ended,
    new Promise<WitnessEnd>((r) =>
      timer = setTimeout(() => r({ code: 0, reason: "still open", maxAck: 0, lastSent: 0 }), 15_000)
    ),
  ]);
  clearTimeout(timer);
  const stored = (await allEvents(d, witness.id)).map((e) => e.seq as number);
  const output = d.output();
  const { commits: failedCommits, sockets: socketsClosed } = refused(output, cause);
  const since = repair.since ?? performance.now();
  await repair.run?.();
  const audit = await fleet.audit(d, 60_000);
  const repairSeconds = (performance.now() - since) / 1000;
  const res = await d.api("/api/sessions");
  await res.body?.cancel();
  return {
    end: {
      witness: {
        ...end,
        storedAtClose: stored.length ? Math.max(...stored) : 0,
        contiguous: stored.every((s, i) => s === i + 1),
      },
      failedCommits,
      socketsClosed,
      audit,
      repairSeconds,
      alive: res.status === 200,
    },
    output,
  };
}
