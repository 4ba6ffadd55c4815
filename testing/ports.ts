/** Free loopback ports for test servers; a module of its own so the helpers that need one import nothing else. */

/** Ask the kernel for a free TCP port on loopback. */
export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}
