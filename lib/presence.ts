/**
 * Who is watching or steering each session: the one owner of presence (which browser sockets have a session's
 * page open, under which token name, and whether someone types in its composer) and of the wheel (one person
 * steers a session for a while; other people's prompts and aborts answer 409 unless forced). Both are live
 * state kept in memory: a restart forgets them, and pages say they are there again when they reconnect.
 * Every change is one `presence` frame to every browser.
 */
import type { PresenceWatcher, ServerFrame, Wheel } from "./protocol.ts";
import { ConflictError, InvalidError } from "./errors.ts";

/** A page that sent nothing (not even its 5 s ping) for this long has gone: its socket died unseen. */
export const PRESENCE_TIMEOUT_MS = 20_000;
/** The longest hold of the wheel, in minutes. */
export const MAX_WHEEL_MINUTES = 120;

interface Seen {
  name: string;
  typing: boolean;
  at: number;
}

/** Presence and the wheel of every session. */
export class Presence {
  /** Per session, per browser socket. */
  #watchers = new Map<string, Map<string, Seen>>();
  #wheels = new Map<string, Wheel>();
  #broadcast: (frame: ServerFrame) => void;
  #now: () => number;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    broadcast: (frame: ServerFrame) => void,
    options: { now?: () => number; sweepMs?: number } = {},
  ) {
    this.#broadcast = broadcast;
    this.#now = options.now ?? Date.now;
    if (options.sweepMs !== 0) {
      this.#timer = setInterval(() => this.sweep(), options.sweepMs ?? 5_000);
      Deno.unrefTimer(this.#timer);
    }
  }

  /**
   * A page of `sessionId` is open on socket `conn` (as `name`), typing or not; repeated as it changes. A socket
   * is one page, so it watches one session at a time: a watch of another moves it (a socket can never make the
   * map grow past one entry).
   */
  watch(conn: string, name: string, sessionId: string, typing: boolean): void {
    for (const [id, other] of this.#watchers) {
      if (id !== sessionId && other.has(conn)) this.leave(conn, id);
    }
    let m = this.#watchers.get(sessionId);
    if (!m) this.#watchers.set(sessionId, m = new Map());
    const before = m.get(conn);
    m.set(conn, { name, typing, at: this.#now() });
    if (!before || before.typing !== typing || before.name !== name) this.#changed(sessionId);
  }

  /** The page of `sessionId` on `conn` closed (or, without a session, every page of that socket). */
  leave(conn: string, sessionId?: string): void {
    for (const [id, m] of this.#watchers) {
      if (sessionId !== undefined && id !== sessionId) continue;
      if (m.delete(conn)) {
        if (m.size === 0) this.#watchers.delete(id);
        this.#changed(id);
      }
    }
  }

  /** Anything came from `conn` (its ping too): its pages are still there. */
  seen(conn: string): void {
    const now = this.#now();
    for (const m of this.#watchers.values()) {
      const s = m.get(conn);
      if (s) s.at = now;
    }
  }

  /** Forget pages whose socket went quiet, and wheels whose time is up. */
  sweep(): void {
    const now = this.#now();
    for (const [id, m] of this.#watchers) {
      let gone = false;
      for (const [conn, s] of m) {
        if (now - s.at > PRESENCE_TIMEOUT_MS) gone = m.delete(conn) || gone;
      }
      if (m.size === 0) this.#watchers.delete(id);
      if (gone) this.#changed(id);
    }
    for (const [id, w] of this.#wheels) {
      if (w.until <= now) {
        this.#wheels.delete(id);
        this.#changed(id);
      }
    }
  }

  /**
   * `name` takes the wheel of a session for `minutes` (1–120); taking it again extends it.
   * @throws {InvalidError} for minutes out of range; {ConflictError} while someone else holds it.
   */
  take(sessionId: string, name: string, minutes: number): Wheel {
    if (!Number.isInteger(minutes) || minutes < 1 || minutes > MAX_WHEEL_MINUTES) {
      throw new InvalidError(`minutes must be a whole number from 1 to ${MAX_WHEEL_MINUTES}`);
    }
    const held = this.wheel(sessionId);
    if (held && held.holder !== name) throw new ConflictError(steering(held));
    const wheel = { holder: name, until: this.#now() + minutes * 60_000 };
    this.#wheels.set(sessionId, wheel);
    this.#changed(sessionId);
    return wheel;
  }

  /** Release the wheel (anyone may: the holder, or someone who needs it back). @returns who held it. */
  release(sessionId: string): Wheel | null {
    const held = this.wheel(sessionId);
    this.#wheels.delete(sessionId);
    if (held) this.#changed(sessionId);
    return held;
  }

  /** Who holds a session's wheel now, or null. */
  wheel(sessionId: string): Wheel | null {
    const w = this.#wheels.get(sessionId);
    return w && w.until > this.#now() ? w : null;
  }

  /**
   * May `name` prompt or abort the session? Yes when nobody else holds its wheel, or when forced.
   * @returns true when the wheel was overridden (to audit as `wheel.override`).
   * @throws {ConflictError} `"<holder> is steering until HH:MM"`.
   */
  checkSteer(sessionId: string, name: string, force = false): boolean {
    const held = this.wheel(sessionId);
    if (!held || held.holder === name) return false;
    if (!force) throw new ConflictError(steering(held));
    return true;
  }

  /** The `presence` frame of one session. */
  frame(sessionId: string): ServerFrame {
    const byName = new Map<string, PresenceWatcher>();
    for (const s of this.#watchers.get(sessionId)?.values() ?? []) {
      const w = byName.get(s.name);
      byName.set(s.name, { name: s.name, typing: s.typing || (w?.typing ?? false) });
    }
    const watchers = [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const wheel = this.wheel(sessionId);
    return { type: "presence", sessionId, watchers, ...(wheel ? { wheel } : {}) };
  }

  /** A frame for every session someone watches or steers (what a newly connected page is told). */
  frames(): ServerFrame[] {
    const ids = new Set([...this.#watchers.keys(), ...this.#wheels.keys()]);
    return [...ids].map((id) => this.frame(id));
  }

  close(): void {
    clearInterval(this.#timer);
  }

  #changed(sessionId: string): void {
    this.#broadcast(this.frame(sessionId));
  }
}

/** "alice is steering until 14:05" (UTC, as the daemon has no idea of the reader's zone). */
function steering(w: Wheel): string {
  const t = new Date(w.until).toISOString().slice(11, 16);
  return `${w.holder} is steering until ${t} UTC`;
}
