/**
 * A loopback TCP load balancer for the multi-replica tests, like HAProxy in `mode tcp` without stickiness:
 * each new client connection goes to the next backend in turn, and when a backend refuses the connection (its
 * daemon was SIGKILLed) the next one is tried, so a client that reconnects after a replica died lands on a live
 * one. Bytes are piped untouched both ways, so WebSocket upgrades and SSE streams pass through; when either
 * side ends or fails the pair is closed, as a proxy does when a replica dies under its clients.
 */

export interface Balancer extends AsyncDisposable {
  /** The loopback port clients connect to. */
  port: number;
  /** http://127.0.0.1:PORT */
  url: string;
  /** Replace the backends (loopback ports); connections already proxied stay where they are. */
  setBackends(ports: number[]): void;
  /** How many proxied connections are open, per backend port (ports with none are absent). */
  connections(): Record<number, number>;
  /** Close the listener and every proxied pair, and wait until every pipe has ended. */
  close(): Promise<void>;
}

interface Pair {
  port: number;
  client: Deno.TcpConn;
  backend: Deno.TcpConn;
}

function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // Already closed by the other pipe or by close().
  }
}

/** Listen on a free loopback port and proxy each connection to one of `backends`. */
export function startBalancer(backends: number[]): Promise<Balancer> {
  let ports = [...backends];
  let next = 0;
  let closed = false;
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const pairs = new Set<Pair>();
  // Clients still waiting for a backend, so close() can end them too.
  const pending = new Set<Deno.TcpConn>();
  const work = new Set<Promise<void>>();
  const track = (p: Promise<void>) => {
    work.add(p);
    p.finally(() => work.delete(p));
  };

  const connectBackend = async (): Promise<{ port: number; conn: Deno.TcpConn } | null> => {
    const order = ports.length ? ports.map((_, i) => ports[(next + i) % ports.length]) : [];
    next = ports.length ? (next + 1) % ports.length : 0;
    for (const backend of order) {
      try {
        return { port: backend, conn: await Deno.connect({ hostname: "127.0.0.1", port: backend }) };
      } catch {
        // Refused (nothing listens: the replica is down) or reset: the next backend gets this client.
      }
    }
    return null;
  };

  const serve = async (client: Deno.TcpConn) => {
    pending.add(client);
    const target = await connectBackend();
    pending.delete(client);
    if (!target || closed) {
      if (target) closeQuietly(target.conn);
      closeQuietly(client);
      return;
    }
    const pair: Pair = { port: target.port, client, backend: target.conn };
    pairs.add(pair);
    const end = () => {
      closeQuietly(client);
      closeQuietly(target.conn);
    };
    // Each pipe closes both sides when it ends, so a half that ended or failed never leaves the other open;
    // the streams themselves never close, abort or cancel the connections, which only `end` does.
    const options = { preventClose: true, preventAbort: true, preventCancel: true };
    await Promise.allSettled([
      client.readable.pipeTo(target.conn.writable, options).finally(end),
      target.conn.readable.pipeTo(client.writable, options).finally(end),
    ]);
    pairs.delete(pair);
  };

  const accepting = (async () => {
    while (true) {
      let conn: Deno.TcpConn;
      try {
        conn = await listener.accept();
      } catch {
        return; // The listener was closed.
      }
      if (closed) {
        closeQuietly(conn);
        return;
      }
      track(serve(conn));
    }
  })();

  let closing: Promise<void> | undefined;
  const close = () =>
    closing ??= (async () => {
      closed = true;
      try {
        listener.close();
      } catch { /* already closed */ }
      await accepting;
      for (const client of pending) closeQuietly(client);
      for (const pair of pairs) {
        closeQuietly(pair.client);
        closeQuietly(pair.backend);
      }
      while (work.size) await Promise.allSettled([...work]);
    })();

  return Promise.resolve({
    port,
    url: `http://127.0.0.1:${port}`,
    setBackends: (list) => {
      ports = [...list];
      next = 0;
    },
    connections: () => {
      const counts: Record<number, number> = {};
      for (const pair of pairs) counts[pair.port] = (counts[pair.port] ?? 0) + 1;
      return counts;
    },
    close,
    [Symbol.asyncDispose]: close,
  });
}
