/**
 * Fault row: malformed frames from another process (bench-like, on loopback) while a healthy session streams
 * deltas to a browser. The daemon must stay up, its RSS must stay under a stated bound, and the healthy
 * session's `message_update` delay p99 during the attack must stay under 2× the baseline measured just before.
 */
import WebSocket from "ws";
import { startDaemon } from "../../tests/_daemon.ts";
import { connectBrowser } from "../../tests/_agent_client.ts";
import { daemonPid, nowMs, pct, rssMiB } from "../../bench/_proc.ts";

/** The RSS bound stated for this row: the daemon's own baseline plus room for a few 10 MB frames in flight. */
export const RSS_BOUND_MIB = 300;

export interface MalformedResult {
  frames: number;
  closes: number;
  alive: boolean;
  rssBefore: number;
  rssPeak: number;
  baselineP99: number;
  duringP99: number;
}

/** Stream deltas on a TCP_NODELAY socket and collect their delay at one browser until `stop()`. */
async function healthy(agentUrl: string, browserUrl: string, token: string) {
  const ws = new WebSocket(agentUrl, { headers: { authorization: `Bearer ${token}` } });
  await new Promise((r) => ws.once("open", r));
  const welcomed = new Promise((r) => ws.once("message", r));
  ws.send(JSON.stringify({
    v: 1,
    type: "hello",
    sessionId: "healthy",
    seq: 0,
    ts: Date.now(),
    session: {
      id: "healthy",
      name: "h",
      cwd: "/",
      model: "m",
      provider: "p",
      agent: false,
      repo: null,
      startedAt: 1,
    },
  }));
  await welcomed;
  const b = await connectBrowser(browserUrl);
  let delays: number[] = [];
  b.socket.onmessage = (e) => {
    const now = nowMs();
    const f = JSON.parse(e.data);
    if (f.type === "events") {
      for (const ev of f.events) if (ev.type === "message_update") delays.push(now - ev.sentAt);
    }
  };
  b.send({ type: "subscribe", sessionId: "healthy" });
  let seq = 1;
  const timer = setInterval(() => {
    ws.send(
      JSON.stringify({
        v: 1,
        sessionId: "healthy",
        seq: seq++,
        ts: Date.now(),
        type: "message_update",
        delta: "t",
        sentAt: nowMs(),
      }),
    );
  }, 3);
  return {
    take() {
      const out = delays.sort((a, b) => a - b);
      delays = [];
      return out;
    },
    async stop() {
      clearInterval(timer);
      ws.close();
      await b.close();
    },
  };
}

/** Run the row with `frames` bad frames. */
export async function malformed(frames: number): Promise<MalformedResult> {
  await using d = await startDaemon();
  const pid = daemonPid(d.dataDir);
  const h = await healthy(d.agentUrl, d.browserUrl, d.token);
  try {
    await new Promise((r) => setTimeout(r, 2000));
    const baseline = h.take();
    const rssBefore = rssMiB(pid);
    let rssPeak = rssBefore;
    const sampler = setInterval(() => rssPeak = Math.max(rssPeak, rssMiB(pid) || 0), 50);
    const attacker = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        new URL("_attacker.ts", import.meta.url).pathname,
        d.agentUrl,
        d.browserUrl,
        d.token,
        String(frames),
      ],
      stdout: "piped",
      stderr: "inherit",
    }).output();
    clearInterval(sampler);
    const during = h.take();
    if (attacker.code !== 0) throw new Error("the attacker process failed");
    const { closes } = JSON.parse(new TextDecoder().decode(attacker.stdout));
    const res = await d.api("/api/sessions");
    await res.body?.cancel();
    return {
      frames,
      closes,
      alive: res.status === 200,
      rssBefore,
      rssPeak,
      baselineP99: pct(baseline, 0.99),
      duringP99: pct(during, 0.99),
    };
  } finally {
    await h.stop();
  }
}
