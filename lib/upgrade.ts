/**
 * The WebSocket upgrade shared by both sockets: auth has already run in the router, so this only checks
 * that the request is an upgrade and applies the dead-peer check (Deno's pings, unless the caller has its own:
 * lib/liveness.ts).
 */
import { HttpError } from "./http.ts";

/**
 * Seconds without a pong before Deno closes a socket; its RFC 6455 pings go out at half this interval, so a dead
 * or paused (SIGSTOP) peer is noticed within 1.5 × this: 13.5 s, under the 15 s a person watching tolerates and
 * the ~16 s after which proxies cut idle sockets. Every WebSocket client answers these pings by itself.
 */
export const IDLE_TIMEOUT_S = 9;

/**
 * Upgrade `req` and hand the socket to `accept`.
 * @param options.pings false when the caller checks the peer's liveness itself: Deno then never pings it.
 * @throws {HttpError} 426 when the request is not a WebSocket upgrade.
 */
export function upgrade(
  req: Request,
  accept: (socket: WebSocket) => void,
  { pings = true }: { pings?: boolean } = {},
): Response {
  if (req.headers.get("upgrade")?.toLowerCase() !== "websocket") {
    throw new HttpError(426, "this endpoint only speaks WebSocket", { upgrade: "websocket" });
  }
  const { socket, response } = Deno.upgradeWebSocket(req, { idleTimeout: pings ? IDLE_TIMEOUT_S : 0 });
  accept(socket);
  return response;
}
