/**
 * The malformed-frames attacker (the fault row's and bench/profile_malformed.ts's): `startAttacker` runs this
 * module as a process of its own, which sends `n` bad frames, half on `/agent/ws` and half on `/ws`,
 * cycling through the kinds below, redialling whenever the daemon closes a socket (which it may, for the
 * frames that break the transport's own rules). Prints "ready", attacks when a line "go" comes on stdin, and
 * prints one JSON line {sent, closes} at the end.
 * Args: agentUrl browserUrl token n
 */
import WebSocket from "ws";
import { lineReader } from "./proc.ts";
import { eventFrame, helloFrame } from "./agent.ts";
import { PROTOCOL_VERSION } from "../lib/wire.ts";

/** The attacker as a process of its own (this module), ready; `go()` runs the attack to its end. */
export async function startAttacker(
  agentUrl: string,
  browserUrl: string,
  token: string,
  frames: number,
): Promise<{ go(): Promise<{ sent: number; closes: number }> }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL(import.meta.url).pathname,
      agentUrl,
      browserUrl,
      token,
      String(frames),
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const line = lineReader(child.stdout);
  const next = async () => {
    const text = await line();
    if (text === null) throw new Error("the attacker process ended early");
    return text;
  };
  if ((await next()) !== "ready") throw new Error("the attacker process did not get ready");
  return {
    async go() {
      const writer = child.stdin.getWriter();
      await writer.write(new TextEncoder().encode("go\n"));
      await writer.close();
      const result = JSON.parse(await next());
      while (await line() !== null) { /* to the end of its output */ }
      if (!(await child.status).success) throw new Error("the attacker process failed");
      return result;
    },
  };
}

if (import.meta.main) await attackerProcess();

async function attackerProcess() {
  const [agentUrl, browserUrl, token, nArg] = Deno.args;
  const N = Number(nArg);
  const BIG = "x".repeat(10 * 1024 * 1024);
  const deep = (depth: number) => "[".repeat(depth) + "]".repeat(depth);
  const ev = (seq: number, extra: Record<string, unknown> = {}) =>
    JSON.stringify(eventFrame("attacker", seq, "agent_start", extra));

  /** The kinds, each a function of the frame's index giving what to send (string: text, Uint8Array: as is). */
  const agentKinds: ((i: number) => { data: string | Uint8Array; binary: boolean })[] = [
    () => ({ data: crypto.getRandomValues(new Uint8Array(64)), binary: true }), // random bytes
    () => ({ data: new Uint8Array([0x7b, 0xff, 0xfe, 0xc3, 0x28, 0x7d]), binary: false }), // invalid UTF-8 text
    (i) => ({ data: i % 50 === 0 ? BIG : deep(10_000), binary: false }), // 10 MB string / deep nesting
    () => ({
      data: JSON.stringify({ v: PROTOCOL_VERSION, type: "hello", sessionId: 42, seq: "x", ts: null }),
      binary: false,
    }),
    (i) => ({ data: ev(i % 2 ? 1 : 1_000_000 + i), binary: false }), // seq regression / gap
    () => ({ data: ev(5, { sessionId: "someone-else" }), binary: false }), // another session's id
    () => ({ data: "not json at all", binary: false }),
  ];
  const browserKinds: ((i: number) => { data: string | Uint8Array; binary: boolean })[] = [
    () => ({ data: crypto.getRandomValues(new Uint8Array(64)), binary: true }),
    () => ({ data: new Uint8Array([0xff, 0xfe, 0xfd]), binary: false }),
    () => ({ data: deep(10_000), binary: false }),
    () => ({ data: JSON.stringify({ type: "subscribe", sessionId: 7, after: "x" }), binary: false }),
    () => ({ data: JSON.stringify({ type: "nope" }), binary: false }),
  ];

  let closes = 0;
  async function open(url: string, hello: boolean): Promise<WebSocket> {
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` }, maxPayload: 1 << 20 });
    ws.on("error", () => {});
    await new Promise((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("close", reject);
    });
    if (hello) {
      ws.send(JSON.stringify(helloFrame("attacker")));
    }
    return ws;
  }

  async function attack(url: string, kinds: typeof agentKinds, count: number, agent: boolean) {
    let ws: WebSocket | null = null;
    for (let i = 0; i < count; i++) {
      // Every tenth agent socket starts without hello, so "frames before hello" are in the mix.
      if (!ws || ws.readyState !== WebSocket.OPEN) {
        if (ws) closes++;
        ws = await open(url, agent && i % 10 !== 0);
      }
      const { data, binary } = kinds[i % kinds.length](i);
      ws.send(data, { binary });
      // Let the socket drain now and then: the point is many frames, not one huge write.
      if (ws.bufferedAmount > 1 << 20 || i % 100 === 0) await new Promise((r) => setTimeout(r, 1));
    }
    ws?.close();
  }

  // Ready (modules loaded, the 10 MB string built): the harness starts the clock, then says go on stdin, so the
  // window it measures holds the attack and not this process's start.
  console.log("ready");
  for await (const chunk of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
    if (chunk.includes("go")) break;
  }
  await Promise.all([
    attack(agentUrl, agentKinds, Math.ceil(N / 2), true),
    attack(browserUrl, browserKinds, Math.floor(N / 2), false),
  ]);
  console.log(JSON.stringify({ sent: N, closes }));
  Deno.exit(0);
}
