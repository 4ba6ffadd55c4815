/**
 * Small runtime helpers and the state shared by every factory run in one process (pi re-runs the extension
 * factory on /new, /resume and /reload, and each run must find the session's link again).
 */
import type { Link } from "./link.ts";
import type { Logger } from "./log.ts";
import type { SettingsGuard } from "./settings_guard.ts";

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

/** What outlives one factory run. */
export interface GlobalState {
  links: Map<string, Link>;
  ctor: Promise<WebSocketCtor> | null;
  loggers: Map<string, Logger>;
  housekept?: boolean;
  /** pi 0.73.1: keeps settings.json's default model through web switches (one per process). */
  settingsGuard?: SettingsGuard;
}

const STATE = Symbol.for("lvmh-agent.state");

/** The process-wide state, created on first use. */
export function globalState(): GlobalState {
  const g = globalThis as unknown as Record<symbol, GlobalState | undefined>;
  return g[STATE] ??= { links: new Map(), ctor: null, loggers: new Map() };
}

type Timer = ReturnType<typeof setTimeout>;

/** Keep a timer from holding pi's process open (pi's print mode exits when its event loop drains). */
export function unref<T extends Timer | ReturnType<typeof setInterval>>(
  timer: T,
): T {
  if (typeof timer === "object" && timer !== null) {
    (timer as { unref?: () => void }).unref?.();
  } else {
    const deno = (globalThis as { Deno?: { unrefTimer?: (id: number) => void } }).Deno;
    if (typeof deno?.unrefTimer === "function") {
      deno.unrefTimer(timer as unknown as number);
    }
  }
  return timer;
}

/** Run `f` after the current handler returns, before any timer (setImmediate where there is one). */
export const later: (f: () => void) => void = typeof setImmediate === "function"
  ? (f) => void setImmediate(f)
  : (f) => void setTimeout(f, 0);
