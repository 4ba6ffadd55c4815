/**
 * Where a session's commands go, for the session registry (lib/sessions.ts): the live plugin socket of each
 * session held here and, with replicas (a `SharedSessions`), the claim behind each socket, the sockets claimed
 * but not welcomed yet, and the shared queue that carries a command to a session another replica holds. Apart
 * from the registry, which owns the rows, so the replica-only state is in one small place; nothing here
 * writes a row.
 */
import { CloseCode } from "./wire.ts";
import type { AskSet, DaemonFrame, SessionInfo } from "./protocol.ts";
import type { Ingest } from "./ingest.ts";
import type { CommandType, PluginLink, SharedSessions } from "./session_commands.ts";

type CommandFrame = DaemonFrame & { type: CommandType };

/** The sessions' plugin sockets on this daemon, and the way to the ones on other replicas. */
export class SessionLinks {
  #links = new Map<string, PluginLink>();
  /** With a shared database: the epoch each socket's claim got. */
  #epochs = new WeakMap<PluginLink, number>();
  /** With a shared database: sessions whose socket here is claimed but not welcomed yet (not online). */
  #welcoming = new Set<string>();
  #ingest: Ingest;
  /** The replicas' shared database; null: this daemon alone. */
  readonly shared: SharedSessions | null;

  constructor(ingest: Ingest, shared: SharedSessions | null) {
    this.#ingest = ingest;
    this.shared = shared;
  }

  /**
   * Claim the session in the shared database once what this replica still stores of it is stored.
   * @throws when the database cannot be reached, or `gone` was aborted (a claim made meanwhile is released).
   */
  async claim(
    info: SessionInfo,
    notAfter: number,
    gone: AbortSignal,
  ): Promise<{ epoch: number; lastSeq: number; ask: AskSet | null }> {
    await this.#ingest.settled(info.id);
    const claimed = await this.shared!.claim(info, notAfter);
    this.#giveUp(info.id, claimed.epoch, gone);
    return claimed;
  }

  /**
   * Bring this replica's copy of a claimed session up to the shared log.
   * @throws as `claim`.
   */
  async catchUp(sessionId: string, epoch: number, gone: AbortSignal): Promise<void> {
    await this.shared!.catchUp(sessionId);
    this.#giveUp(sessionId, epoch, gone);
  }

  /** A claim that comes back after its socket went is released at once. */
  #giveUp(sessionId: string, epoch: number, gone: AbortSignal): void {
    if (!gone.aborted) return;
    this.shared!.release(sessionId, epoch);
    throw gone.reason;
  }

  /**
   * Make `link` the session's socket, closing an older one with 4000. With the epoch of its shared claim it is
   * not online until `welcomed`.
   */
  attach(sessionId: string, link: PluginLink, epoch?: number): void {
    if (epoch !== undefined) this.#epochs.set(link, epoch);
    const old = this.#links.get(sessionId);
    this.#links.set(sessionId, link);
    if (epoch !== undefined) this.#welcoming.add(sessionId);
    if (old && old !== link) old.close(CloseCode.replaced, "replaced by a newer connection");
  }

  /** The session's claimed socket got its welcome: it is online from now on. */
  welcomed(sessionId: string): void {
    this.#welcoming.delete(sessionId);
  }

  /**
   * Forget `link` when it is the session's current socket; what it sent is stored (its `bye` included) before
   * its shared claim goes, since appends need the epoch.
   * @returns false when `link` is not the session's socket.
   */
  detach(sessionId: string, link: PluginLink): boolean {
    if (this.#links.get(sessionId) !== link) return false;
    this.#links.delete(sessionId);
    this.#welcoming.delete(sessionId);
    this.#ingest.flushSession(sessionId); // a `bye` still queued is stored before the list says offline
    const epoch = this.#epochs.get(link);
    const shared = this.shared;
    if (shared && epoch !== undefined) {
      void this.#ingest.settled(sessionId).then(() => shared.release(sessionId, epoch));
    }
    return true;
  }

  /** The session's socket on this daemon, welcomed or not. */
  here(sessionId: string): PluginLink | undefined {
    return this.#links.get(sessionId);
  }

  /** The session's welcomed socket on this daemon. */
  live(sessionId: string): PluginLink | undefined {
    return this.#welcoming.has(sessionId) ? undefined : this.#links.get(sessionId);
  }

  /** True when no socket here and a live replica other than this one holds the session. */
  heldElsewhere(sessionId: string): boolean {
    return !this.#links.has(sessionId) && (this.shared?.heldElsewhere(sessionId) ?? false);
  }

  /** True when the session has a live socket (here, or on another replica of a shared database). */
  isOnline(sessionId: string): boolean {
    return this.live(sessionId) !== undefined || this.heldElsewhere(sessionId);
  }

  /** How many sessions have their socket on this daemon. */
  get count(): number {
    return this.#links.size;
  }

  /** Write a command frame to the session's socket here, or queue it for its holder on a shared database. */
  send(link: PluginLink | null, frame: CommandFrame): void {
    if (this.shared) this.shared.send(frame);
    else link?.send(frame);
  }

  /** Send a command frame if the session is online; false when it is not. */
  trySend(frame: CommandFrame): boolean {
    const sessionId = frame.sessionId;
    if (this.shared && !this.isOnline(sessionId)) {
      // This replica's view of the other replicas' sessions lags their claims by a poll: the shared row says.
      this.shared.send(frame, { ifHeld: true });
      return false;
    }
    if (!this.isOnline(sessionId)) return false;
    this.send(this.#links.get(sessionId) ?? null, frame);
    return true;
  }

  /** Tell a session's plugin its new ask set (`frame` makes the `policy`), after the shared row has it. */
  sendPolicy(sessionId: string, ask: AskSet, frame: () => CommandFrame): void {
    const shared = this.shared;
    if (!shared) return this.#links.get(sessionId)?.send(frame());
    // The row first, then the frame: a plugin welcomed in between reads the new set from the row.
    shared.setAsk(sessionId, ask).then(
      () => this.isOnline(sessionId) && shared.send(frame()),
      (error) => console.error(`lvmh: session ${sessionId}: policy not stored: ${(error as Error).message}`),
    );
  }

  /** Close every socket here (shutdown). */
  closeAll(code: number, reason: string): void {
    for (const link of this.#links.values()) link.close(code, reason);
    this.#links.clear();
  }
}
