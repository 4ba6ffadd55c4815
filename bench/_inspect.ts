/**
 * Bench helper for finding where the daemon's time and memory go: run `main.ts` under the V8 inspector (as
 * `testing/daemon.ts` runs it, plus `--inspect`) and speak the DevTools protocol to it — CPU profiles with
 * sample timestamps, heap snapshots, and expressions evaluated inside the daemon.
 */
import { startDaemon } from "../testing/daemon.ts";

/** A DevTools protocol session over the inspector's WebSocket. */
export class Cdp {
  #ws: WebSocket;
  #next = 1;
  #waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  #listeners = new Map<string, (params: Record<string, unknown>) => void>();

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.onmessage = (e) => {
      const msg = JSON.parse(e.data);
      if (msg.id !== undefined) {
        const w = this.#waiting.get(msg.id);
        this.#waiting.delete(msg.id);
        if (msg.error) w?.reject(new Error(`${msg.error.message}`));
        else w?.resolve(msg.result);
      } else this.#listeners.get(msg.method)?.(msg.params);
    };
  }

  static async connect(url: string): Promise<Cdp> {
    const ws = new WebSocket(url);
    await new Promise((resolve, reject) => {
      ws.onopen = resolve;
      ws.onerror = () => reject(new Error(`cannot reach the inspector at ${url}`));
    });
    return new Cdp(ws);
  }

  send<T = Record<string, unknown>>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const id = this.#next++;
    this.#ws.send(JSON.stringify({ id, method, params }));
    return new Promise((resolve, reject) =>
      this.#waiting.set(id, { resolve: resolve as (v: unknown) => void, reject })
    );
  }

  on(method: string, fn: (params: Record<string, unknown>) => void): void {
    this.#listeners.set(method, fn);
  }

  /** Evaluate an expression in the daemon and return its value (JSON-able). */
  async eval<T = unknown>(expression: string): Promise<T> {
    const r = await this.send<{ result: { value: T }; exceptionDetails?: { text: string } }>(
      "Runtime.evaluate",
      { expression, returnByValue: true, awaitPromise: true },
    );
    if (r.exceptionDetails) throw new Error(`evaluate failed: ${JSON.stringify(r.exceptionDetails)}`);
    return r.result.value;
  }

  /** Take a heap snapshot and return it as text (the .heapsnapshot format). */
  async heapSnapshot(): Promise<string> {
    const chunks: string[] = [];
    this.on("HeapProfiler.addHeapSnapshotChunk", (p) => chunks.push(p.chunk as string));
    await this.send("HeapProfiler.enable");
    await this.send("HeapProfiler.takeHeapSnapshot", { reportProgress: false });
    return chunks.join("");
  }

  close(): void {
    this.#ws.close();
  }
}

/** A daemon process under the inspector. */
export interface InspectedDaemon extends AsyncDisposable {
  pid: number;
  dataDir: string;
  token: string;
  agentUrl: string;
  browserUrl: string;
  url: string;
  cdp: Cdp;
  output(): string;
}

/** Start `main.ts` with `--inspect` and a fresh data dir; resolves once it listens and the inspector is attached. */
export async function startInspectedDaemon(
  options: { env?: Record<string, string>; v8Flags?: string[] } = {},
): Promise<InspectedDaemon> {
  const d = await startDaemon({ ...options, inspect: true });
  const list = await (await fetch(`http://127.0.0.1:${d.inspectPort}/json/list`)).json();
  const cdp = await Cdp.connect(list[0].webSocketDebuggerUrl);
  return {
    pid: d.pid,
    dataDir: d.dataDir,
    token: d.token,
    url: d.url,
    agentUrl: d.agentUrl,
    browserUrl: d.browserUrl,
    cdp,
    output: d.output,
    async [Symbol.asyncDispose]() {
      cdp.close();
      await d.stop();
    },
  };
}

/** One node of a V8 CPU profile. */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

/** A V8 CPU profile (Profiler.stop's `profile`). */
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const IDLE = new Set(["(idle)", "(program)"]);

/** Name of a profile node: function, file and line. */
function label(n: ProfileNode): string {
  const file = n.callFrame.url.replace(/^.*\/(work\/main|node_modules)\//, "");
  return `${n.callFrame.functionName || "(anonymous)"} ${file}:${n.callFrame.lineNumber + 1}`;
}

/**
 * Busy spells in a profile: runs of consecutive non-idle samples longer than `minMs`, each with the functions
 * (self time, and the stack of the heaviest sample) that filled it.
 */
export function busySpells(p: CpuProfile, minMs: number) {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const spells: { startMs: number; ms: number; self: [string, number][]; stacks: [string, number][] }[] = [];
  let t = p.startTime;
  let start = -1;
  let self = new Map<string, number>();
  let stacks = new Map<string, number>();
  const close = (endT: number) => {
    const ms = (endT - start) / 1000;
    if (ms >= minMs) {
      spells.push({
        startMs: (start - p.startTime) / 1000,
        ms,
        self: [...self].sort((a, b) => b[1] - a[1]).slice(0, 6),
        stacks: [...stacks].sort((a, b) => b[1] - a[1]).slice(0, 3),
      });
    }
    start = -1;
    self = new Map();
    stacks = new Map();
  };
  for (let i = 0; i < p.samples.length; i++) {
    const dt = p.timeDeltas[i] ?? 0;
    t += dt;
    const node = byId.get(p.samples[i])!;
    const idle = IDLE.has(node.callFrame.functionName);
    if (idle) {
      if (start >= 0) close(t);
      continue;
    }
    if (start < 0) start = t;
    const ms = (p.timeDeltas[i + 1] ?? 0) / 1000;
    self.set(label(node), (self.get(label(node)) ?? 0) + ms);
    // A short stack: the top frames below the event loop, innermost last.
    const frames: string[] = [];
    for (let id: number | undefined = node.id; id !== undefined && frames.length < 40; id = parent.get(id)) {
      const n = byId.get(id)!;
      if (n.callFrame.url.includes("/work/main/") && !n.callFrame.url.includes("node_modules")) {
        frames.push(label(n));
      }
    }
    const key = frames.slice(0, 4).reverse().join(" > ") || label(node);
    stacks.set(key, (stacks.get(key) ?? 0) + ms);
  }
  if (start >= 0) close(t);
  return spells;
}

/** Self time per function over the whole profile, heaviest first, in ms. */
export function selfTimes(p: CpuProfile, top = 25): [string, number][] {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  for (let i = 0; i < p.samples.length; i++) {
    const n = byId.get(p.samples[i])!;
    const key = label(n);
    self.set(key, (self.get(key) ?? 0) + (p.timeDeltas[i + 1] ?? 0) / 1000);
  }
  return [...self].sort((a, b) => b[1] - a[1]).slice(0, top);
}

/**
 * Install probes in the daemon (before its sockets open): a 1 ms timer noting every tick later than 5 ms
 * (`__lag`: [wall ms, gap ms]), the time from a delta's `sentAt` to the daemon's onmessage for it (`__recv`) and
 * to the daemon's send of the events frame holding it (`__hop`). Nothing is recorded until `__on` is true.
 */
export async function instrumentDaemon(cdp: Cdp): Promise<void> {
  await cdp.eval(`(() => {
  globalThis.__lag = [];
  globalThis.__on = false;
  let last = performance.now();
  globalThis.__lagTimer = setInterval(() => {
    const now = performance.now();
    if (globalThis.__on && now - last > 5) globalThis.__lag.push([Math.round(performance.timeOrigin + last), +(now - last).toFixed(1)]);
    last = now;
  }, 1);
  // Time from the plugin's stamp to the daemon handing the frame to a browser socket: splits each delay into
  // the part before the daemon's send and the part after it.
  globalThis.__hop = [];
  const send = WebSocket.prototype.send;
  WebSocket.prototype.send = function (data) {
    if (globalThis.__on && typeof data === "string" && data.startsWith('{"type":"events"')) {
      const now = performance.timeOrigin + performance.now();
      const ms = [...data.matchAll(/"sentAt":([\\d.]+)/g)];
      for (const m of ms) {
        globalThis.__hop.push(now - Number(m[1]));
        const r = globalThis.__recvAt.get(m[1]);
        if (r !== undefined) {
          globalThis.__gap.push([+(now - r).toFixed(2), ms.length, (data.match(/"seq":/g) || []).length]);
          globalThis.__recvAt.delete(m[1]);
        }
      }
    }
    return send.call(this, data);
  };
  // And the time from the stamp to the daemon's onmessage for the plugin's frame.
  globalThis.__recv = [];
  // onmessage → send of the same delta (keyed by its sentAt): [ms, deltas in the frame, events in the frame].
  globalThis.__recvAt = new Map();
  globalThis.__gap = [];
  const desc = Object.getOwnPropertyDescriptor(WebSocket.prototype, "onmessage");
  Object.defineProperty(WebSocket.prototype, "onmessage", {
    ...desc,
    set(fn) {
      desc.set.call(this, fn && ((e) => {
        if (globalThis.__on && typeof e.data === "string" && e.data.includes('"message_update"')) {
          const m = /"sentAt":([\\d.]+)/.exec(e.data);
          if (m) {
            globalThis.__recv.push(performance.timeOrigin + performance.now() - Number(m[1]));
            if (!globalThis.__recvAt.has(m[1])) globalThis.__recvAt.set(m[1], performance.timeOrigin + performance.now());
          }
        }
        return fn(e);
      }));
    },
  });
})()`);
}
