/**
 * Shared by the in-process plugin tests: a throwaway HOME for the plugin's log and seq files, and the test
 * options they need (the plugin keeps timers and sockets alive by design until its host shuts it down).
 */
import { type Daemon, waitFor } from "./daemon.ts";
import { allEvents, sessions } from "./pi.ts";
import { fakePi } from "./fake_pi.ts";
import { createLvmhAgent } from "../plugin/lvmh-agent.mjs";
import { PROTOCOL_VERSION } from "../lib/wire.ts";

/** A throwaway HOME; `log()` reads the plugin's log file. */
export async function tempHome() {
  const home = await Deno.makeTempDir({ prefix: "lvmh-plugin-" });
  return {
    home,
    log: () => {
      try {
        return Deno.readTextFileSync(`${home}/.pi/lvmh-agent.log`);
      } catch {
        return "";
      }
    },
    [Symbol.asyncDispose]: async () => {
      await Deno.remove(home, { recursive: true }).catch(() => {});
      // The plugin's batched log and seq writes may still land (and recreate the dir) just after.
      await new Promise((r) => setTimeout(r, 400));
      await Deno.remove(home, { recursive: true }).catch(() => {});
    },
  };
}

export const opts = { sanitizeOps: false, sanitizeResources: false };

export type Ev = Record<string, unknown> & { seq: number; type: string };

type DaemonLike = Pick<Daemon, "agentUrl" | "token" | "api">;

/** A fake pi with the plugin loaded against `d`, started, once the daemon lists its session online. */
export async function pluginOnline(d: DaemonLike, home: string, sessionId: string) {
  const fake = fakePi(sessionId);
  createLvmhAgent({ url: d.agentUrl, token: d.token, home })(fake.pi);
  await fake.fire("session_start", { reason: "startup" });
  await waitFor(
    async () => (await sessions(d)).find((s) => s.id === sessionId && s.online),
    `${sessionId} online`,
  );
  return fake;
}

/** The session's stored events, once they include the plugin's `buffer_overflow` notice. */
export function overflowEvents(d: DaemonLike, sessionId: string): Promise<Ev[]> {
  return waitFor(
    async () => {
      const evs = await allEvents(d, sessionId) as Ev[];
      return evs.some((e) => e.type === "buffer_overflow") ? evs : null;
    },
    "overflow notice",
    30_000,
  );
}

/** A frame the fake daemon received. */
export type Frame = Record<string, unknown> & { type: string; seq: number };

/** What a test can do with the loopback fake daemon. */
export interface FakeDaemon extends AsyncDisposable {
  url: string;
  token: string;
  /** Every frame received, in order (a batch's events are listed after it, one by one). */
  frames: Frame[];
  /** The size in bytes of every text frame received, in order. */
  sizes: number[];
  /** How many sockets said hello so far. */
  hellos(): number;
  /** Send a daemon → plugin frame on the current socket (envelope added). */
  send(frame: Record<string, unknown>): void;
  /** Close the current socket (the plugin reconnects). */
  drop(): void;
  /** The first received frame matching `pred`, once it is there. */
  waitFrame(pred: (f: Frame) => boolean, what: string, ms?: number): Promise<Frame>;
  /** Answer `ping` frames with `pong` (default true); false plays a daemon that froze. */
  answerPings: boolean;
  /** Stop reading and answering the current socket, which stays open (a paused daemon, a dead link). */
  freeze(): void;
}

/**
 * A loopback stand-in for the daemon's agent socket: welcomes with `welcome` (policy and features as given),
 * acks every event, and records every frame. For the plugin's side of new frames, tested in-process.
 */
export function fakeDaemon(
  options: { policy?: { ask: string[] | "all" }; features?: string[]; errorOnPing?: boolean } = {},
): FakeDaemon {
  const frames: Frame[] = [];
  const sizes: number[] = [];
  const frozen = new Set<WebSocket>();
  let current: WebSocket | null = null;
  let hellos = 0;
  let lastSeq = 0;
  const envelope = (sessionId: string) => ({ v: PROTOCOL_VERSION, sessionId, seq: 0, ts: Date.now() });
  let sessionId = "";
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const { socket, response } = Deno.upgradeWebSocket(req);
    socket.onmessage = (e) => {
      if (frozen.has(socket)) return;
      sizes.push(new TextEncoder().encode(e.data as string).length);
      const f = JSON.parse(e.data as string) as Frame;
      frames.push(f);
      if (f.type === "hello") {
        hellos++;
        current = socket;
        sessionId = f.sessionId as string;
        const welcome: Record<string, unknown> = { ...envelope(sessionId), type: "welcome", lastSeq };
        if (options.policy) welcome.policy = options.policy;
        if (options.features) welcome.features = options.features;
        socket.send(JSON.stringify(welcome));
      } else if (f.type === "ping") {
        if (options.errorOnPing) {
          socket.send(
            JSON.stringify({
              v: PROTOCOL_VERSION,
              type: "error",
              code: "bad_frame",
              message: "unknown type ping",
            }),
          );
        } else if (fake.answerPings) socket.send(JSON.stringify({ ...envelope(sessionId), type: "pong" }));
      } else {
        const events = f.type === "batch" ? f.events as Frame[] : [f];
        if (f.type === "batch") frames.push(...events);
        for (const ev of events) if (ev.type !== "message_update") lastSeq = Math.max(lastSeq, ev.seq);
        socket.send(JSON.stringify({ ...envelope(sessionId), type: "ack", lastSeq }));
      }
    };
    return response;
  });
  const fake: FakeDaemon = {
    url: `ws://127.0.0.1:${server.addr.port}/agent/ws`,
    token: "fake-daemon-token-1234",
    frames,
    sizes,
    hellos: () => hellos,
    send(frame) {
      current?.send(JSON.stringify({ ...envelope(sessionId), ...frame }));
    },
    drop() {
      current?.close(1011);
      current = null;
    },
    waitFrame: (pred, what, ms = 10_000) => waitFor(() => frames.find(pred), what, ms),
    answerPings: true,
    freeze() {
      if (current) frozen.add(current);
    },
    [Symbol.asyncDispose]: async () => {
      current?.close();
      await server.shutdown();
    },
  };
  return fake;
}
