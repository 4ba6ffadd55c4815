/**
 * Which WebSocket class to use: the platform's (Node >= 22, Deno), else one the host gave, else the `ws`
 * package bundled into the plugin file (Node 20 has no global WebSocket). `ws` is imported lazily, so its
 * code only runs where it is needed.
 */
import { processSlot } from "./process_slot.ts";

/** A WebSocket constructor as the plugin uses it: the platform's, a host's, or the bundled `ws`. */
export type WebSocketCtor = new (
  url: string,
  options?: { headers?: Record<string, string> },
) => WebSocketLike;

/** The part of a WebSocket the plugin uses (the WHATWG one and `ws` both have it). */
export interface WebSocketLike {
  readonly bufferedAmount: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((e: unknown) => void) | null;
  onmessage: ((e: { data: unknown }) => void) | null;
  onerror: ((e: unknown) => void) | null;
  onclose: ((e: { code?: number }) => void) | null;
}

/** The WebSocket class to dial the daemon with. */
export function webSocketClass(): Promise<WebSocketCtor> {
  const scope = globalThis as unknown as Record<string | symbol, unknown>;
  if (typeof scope.WebSocket === "function") {
    return Promise.resolve(scope.WebSocket as WebSocketCtor);
  }
  // A host may hand over a WebSocket class (the container bridge does, from its own `ws`).
  const given = scope[Symbol.for("lvmh-agent.WebSocket")];
  if (typeof given === "function") {
    return Promise.resolve(given as WebSocketCtor);
  }
  // One import per process, shared by every factory run.
  return processSlot(
    "ctor",
    () => import("ws").then((m) => (m.WebSocket ?? m.default) as unknown as WebSocketCtor),
  );
}
