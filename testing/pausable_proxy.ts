/**
 * A TCP relay on loopback whose traffic a test can hold in both directions, connections left open: a network
 * partition between a daemon and its database (or any server), switched on and off (`pause`, `resume`).
 */

/** A TCP relay in front of a server whose traffic can be held: a network partition a test can switch on. */
export interface PausableProxy extends AsyncDisposable {
  port: number;
  /** Hold every byte in both directions (connections stay open, as in a partition). */
  pause(): void;
  /** Let the held bytes and new ones through. */
  resume(): void;
  close(): Promise<void>;
}

/** Relay `127.0.0.1:<port>` to `upstreamPort` on loopback, with a switch to hold the traffic. */
export function pausableProxy(upstreamPort: number): PausableProxy {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let gate: { promise: Promise<void>; resolve: () => void } | null = null;
  const conns = new Set<Deno.Conn>();
  const pipes: Promise<void>[] = [];
  const pump = async (from: Deno.Conn, to: Deno.Conn) => {
    const buf = new Uint8Array(64 * 1024);
    try {
      for (;;) {
        const n = await from.read(buf);
        if (n === null) break;
        if (gate) await gate.promise;
        let off = 0;
        while (off < n) off += await to.write(buf.subarray(off, n));
      }
    } catch {
      // A side closed: the relay ends with it.
    }
    for (const c of [from, to]) {
      try {
        c.close();
      } catch {
        // Closed already.
      }
      conns.delete(c);
    }
  };
  const accepting = (async () => {
    try {
      for await (const client of listener) {
        const upstream = await Deno.connect({ hostname: "127.0.0.1", port: upstreamPort });
        conns.add(client).add(upstream);
        pipes.push(pump(client, upstream), pump(upstream, client));
      }
    } catch {
      // The listener was closed.
    }
  })();
  const resume = () => {
    gate?.resolve();
    gate = null;
  };
  const close = async () => {
    resume();
    listener.close();
    for (const c of conns) {
      try {
        c.close();
      } catch {
        // Closed already.
      }
    }
    await accepting;
    await Promise.all(pipes);
  };
  return {
    port: (listener.addr as Deno.NetAddr).port,
    pause() {
      if (gate) return;
      let resolve!: () => void;
      const promise = new Promise<void>((r) => resolve = r);
      gate = { promise, resolve };
    },
    resume,
    close,
    [Symbol.asyncDispose]: close,
  };
}
