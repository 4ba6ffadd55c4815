/**
 * A server that takes every connection and never answers, as a hung Docker engine, Kubernetes API server or
 * database does: for the tests of what lvmh does when a call would otherwise wait out its whole timeout.
 */

export interface SilentServer extends AsyncDisposable {
  /** How many connections it took so far. */
  accepted(): number;
  close(): Promise<void>;
}

/** Listen on a unix socket path or a loopback TCP port (0: a free one, read back from `addr`). */
export function listenSilent(
  options: Deno.UnixListenOptions & { transport: "unix" } | { port: number },
): SilentServer & { addr: Deno.Addr } {
  const listener = "transport" in options
    ? Deno.listen(options)
    : Deno.listen({ hostname: "127.0.0.1", port: options.port });
  const held: Deno.Conn[] = [];
  // Held open and never read from: the peer's request waits for an answer that does not come.
  const accepting = (async () => {
    for await (const conn of listener) held.push(conn);
  })().catch(() => {});
  const close = async () => {
    listener.close();
    await accepting;
    for (const conn of held) conn.close();
  };
  return { addr: listener.addr, accepted: () => held.length, close, [Symbol.asyncDispose]: close };
}
