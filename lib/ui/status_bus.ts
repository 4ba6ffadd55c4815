/**
 * Lets the page's one socket owner (an island) and the top bar's connection indicator (another island) talk
 * without sharing a component tree: DOM events on `globalThis`, with the latest status kept for late listeners.
 */
import type { SocketStatus } from "./live_socket.ts";

const STATUS = "lvmh:socket-status";
const RETRY = "lvmh:socket-retry";
let last: SocketStatus | null = null;

/** Announce the socket's state. */
export function publishStatus(status: SocketStatus): void {
  last = status;
  globalThis.dispatchEvent(new CustomEvent(STATUS, { detail: status }));
}

/**
 * Listen to socket states; called at once with the latest one, if any.
 * @returns a function that stops listening
 */
export function subscribeStatus(cb: (s: SocketStatus) => void): () => void {
  const listener = (e: Event) => cb((e as CustomEvent<SocketStatus>).detail);
  globalThis.addEventListener(STATUS, listener);
  if (last) cb(last);
  return () => globalThis.removeEventListener(STATUS, listener);
}

/** Ask the socket owner to reconnect now. */
export function requestRetry(): void {
  globalThis.dispatchEvent(new Event(RETRY));
}

/**
 * Run `cb` whenever a retry is requested.
 * @returns a function that stops listening
 */
export function onRetryRequest(cb: () => void): () => void {
  globalThis.addEventListener(RETRY, cb);
  return () => globalThis.removeEventListener(RETRY, cb);
}
