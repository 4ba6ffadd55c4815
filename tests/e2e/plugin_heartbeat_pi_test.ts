/**
 * The plugin's heartbeat with the real pi (RPC mode, 0.73.1 and 1.6.0) and a real daemon that is paused
 * (SIGSTOP): its socket stays open but nothing comes back, so after 15 s of silence the plugin drops it and
 * redials; once the daemon continues (SIGCONT) the session is online again and every event pi produced
 * meanwhile is stored, none twice.
 */
import assert from "node:assert/strict";
import { type Daemon, startDaemon, waitFor } from "../../testing/daemon.ts";
import { startFakeLlm } from "../../testing/fixtures/fake_llm.mjs";
import {
  assertInstalled,
  makePiHome,
  PI_VERSIONS,
  piRpc,
  sessions,
  settledEvents,
} from "../../testing/pi.ts";

type Ev = Record<string, unknown> & { seq: number; type: string };
const role = (e: Ev) => (e.message as { role?: string } | undefined)?.role;
const text = (e: Ev) => (e.message as { text?: string } | undefined)?.text;

/** The daemon's pid, found by its data dir in /proc (the test helper does not hand it out). */
function daemonPid(d: Daemon): number {
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const env = Deno.readTextFileSync(`/proc/${e.name}/environ`).split("\0");
      if (env.includes(`LVMH_DATA_DIR=${d.dataDir}`)) return Number(e.name);
    } catch { /* gone, or not ours to read */ }
  }
  throw new Error(`no process with LVMH_DATA_DIR=${d.dataDir}`);
}

/** Seqs unique and increasing; a gap only where live deltas were dropped (inside an assistant message). */
function assertNoLossNoRepeat(events: Ev[]) {
  for (let i = 1; i < events.length; i++) {
    const a = events[i - 1], b = events[i];
    assert.ok(b.seq > a.seq, `seq ${b.seq} after ${a.seq}`);
    if (b.seq === a.seq + 1) continue;
    assert.ok(
      a.type === "message_start" && role(a) === "assistant" && b.type === "message_end",
      `gap ${a.seq}..${b.seq} between ${a.type} and ${b.type}`,
    );
  }
}

for (const v of PI_VERSIONS) {
  Deno.test(`plugin on pi ${v.name}: a paused daemon is dropped after 15 s and redialled`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using home = await makePiHome(llm.url);
    await using d = await startDaemon();
    await using pi = piRpc(v, home, home.env(d));
    let pid = 0;
    try {
      const id = (await waitFor(async () => (await sessions(d)).find((s) => s.online), "pi online"))
        .id as string;
      pid = daemonPid(d);
      Deno.kill(pid, "SIGSTOP");
      await pi.command({ type: "prompt", message: "TEXTONLY while the daemon is paused" });
      await pi.waitLine((l) => l.type === "agent_end", "pi answered without the daemon");
      await waitFor(
        () => home.pluginLog().includes("daemon silent"),
        "the plugin gives up on the socket",
        25_000,
      );
      Deno.kill(pid, "SIGCONT");
      pid = 0;
      const events = await settledEvents(d, id, "the events of the paused time", 20_000);
      assert.ok(events.some((e) => text(e) === "You said: TEXTONLY while the daemon is paused"));
      assertNoLossNoRepeat(events);
      await waitFor(async () => (await sessions(d)).find((s) => s.id === id)?.online, "online again");
    } finally {
      if (pid) Deno.kill(pid, "SIGCONT");
      await llm.close();
    }
  });
}
