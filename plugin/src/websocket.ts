/**
 * Which WebSocket class to use: the platform's (Node >= 22, Deno), else one the host gave, else the `ws`
 * package bundled into the plugin file (Node 20 has no global WebSocket). `ws` is imported lazily, so its
 * code only runs where it is needed.
 */
import { globalState, type WebSocketCtor } from "./runtime.ts";

/** The WebSocket class to dial the daemon with. */
export function webSocketClass(): Promise<WebSocketCtor> {
  const g = globalState();
  const scope = globalThis as unknown as Record<string | symbol, unknown>;
  if (typeof scope.WebSocket === "function") {
    return Promise.resolve(scope.WebSocket as WebSocketCtor);
  }
  // A host may hand over a WebSocket class (the container bridge does, from its own `ws`).
  const given = scope[Symbol.for("lvmh-agent.WebSocket")];
  if (typeof given === "function") {
    return Promise.resolve(given as WebSocketCtor);
  }
  g.ctor ??= import("ws").then((m) => (m.WebSocket ?? m.default) as unknown as WebSocketCtor);
  return g.ctor;
}
