/**
 * The live plugin socket of each online session, and the one way commands reach a plugin.
 */
import { CloseCode, type DaemonFrame, PROTOCOL_VERSION } from "./protocol.ts";
import { sessionNotFound, sessionOffline } from "./errors.ts";

/** The daemon's side of one plugin connection, as far as routing commands needs it. */
export interface PluginLink {
  send(frame: DaemonFrame): void;
  close(code: number, reason: string): void;
}

type Command =
  | { type: "prompt"; promptId: string; message: string; deliverAs: "steer" | "followUp" }
  | { type: "abort" };

/** Which plugin socket serves which session; a newer socket for a session replaces the older one. */
export class LiveSessions {
  #links = new Map<string, PluginLink>();

  constructor(private readonly exists: (sessionId: string) => boolean) {}

  /** Register `link` as the session's socket, closing any earlier one with code 4000. */
  attach(sessionId: string, link: PluginLink): void {
    const old = this.#links.get(sessionId);
    this.#links.set(sessionId, link);
    if (old && old !== link) old.close(CloseCode.replaced, "replaced by a newer connection");
  }

  /** Forget `link`; returns true when it was the session's current socket (the session goes offline). */
  detach(sessionId: string, link: PluginLink): boolean {
    if (this.#links.get(sessionId) !== link) return false;
    this.#links.delete(sessionId);
    return true;
  }

  /** True when the session has a live socket. */
  isOnline(sessionId: string): boolean {
    return this.#links.has(sessionId);
  }

  /**
   * Send a command to a session's plugin.
   * @throws {NotFoundError} when the session is unknown.
   * @throws {OfflineError} when it has no live socket.
   */
  send(sessionId: string, command: Command): void {
    const link = this.#links.get(sessionId);
    if (!link) {
      if (!this.exists(sessionId)) throw sessionNotFound(sessionId);
      throw sessionOffline(sessionId);
    }
    link.send({ v: PROTOCOL_VERSION, sessionId, seq: 0, ts: Date.now(), ...command });
  }

  /** Close every plugin socket (shutdown). */
  closeAll(code: number, reason: string): void {
    for (const link of this.#links.values()) link.close(code, reason);
    this.#links.clear();
  }
}
