/**
 * The session registry: the one owner of a session's row changes, its live plugin link, its ask set and the one
 * throttled "sessions changed" signal (`session_update` frames with only the rows that changed). Sockets, routes
 * and the spawner ask it; none of them writes a session row or publishes a session frame themselves. What a row
 * shows and the throttle are in lib/session_rows.ts; the sockets, and with replicas their claims and the shared
 * command queue, in lib/session_links.ts.
 */
import { CloseCode, PROTOCOL_VERSION } from "./wire.ts";
import type {
  AskSet,
  BudgetGlance,
  DaemonFrame,
  PromptImage,
  SessionInfo,
  SessionMergeRequest,
  SessionSummary,
} from "./protocol.ts";
import type { Store } from "./store.ts";
import type { Ingest } from "./ingest.ts";
import type { Hub } from "./hub.ts";
import type { ImageStore, StoredImageRef } from "./image_store.ts";
import type { ImageLog } from "./storage/image_log.ts";
import { checkImages } from "./images.ts";
import { ConflictError, sessionNotFound, sessionOffline } from "./errors.ts";
import { type ContainerView, SessionRows } from "./session_rows.ts";
import { SessionLinks } from "./session_links.ts";
import type {
  Command,
  CommandType,
  PluginLink,
  PromptRequest,
  SentPrompt,
  SharedSessions,
} from "./session_commands.ts";

export type { Command, CommandType, ContainerView, PluginLink, PromptRequest, SentPrompt, SharedSessions };
export { SESSION_UPDATE_INTERVAL_MS } from "./session_rows.ts";

export interface SessionsOptions {
  /** Ask set of sessions that have none of their own (`LVMH_ASK`). */
  defaultAsk: AskSet;
  /** Ask set of registered (spawned) sessions when the spawn names none (`LVMH_SPAWN_ASK`). */
  spawnAsk?: AskSet;
  /** Pending approvals of a session (the approvals owner answers). */
  waiting?: (sessionId: string) => number;
  /** Keeps the images of prompts (`prompt`); without it a prompt with images is refused. */
  images?: ImageStore;
  /** A session's merge request as its row shows it (the merge requests owner answers). */
  mergeRequest?: (sessionId: string) => SessionMergeRequest | undefined;
  /** The replicas' shared database; absent: this daemon alone, its SQLite file the truth. */
  shared?: SharedSessions;
}

/** Every session the daemon knows, and which of them have a live plugin socket. */
export class Sessions {
  /** The plugin sockets, and with replicas their claims and the shared command queue. */
  #links: SessionLinks;
  /** What browsers see of the rows, and the throttled signal of their changes. */
  #rows: SessionRows;
  #defaultAsk: AskSet;
  #spawnAsk: AskSet;
  #images: ImageStore | null;
  #store: Store;
  #ingest: Ingest;

  constructor(store: Store, ingest: Ingest, hub: Hub, options: SessionsOptions) {
    this.#store = store;
    this.#ingest = ingest;
    this.#images = options.images ?? null;
    this.#links = new SessionLinks(ingest, options.shared ?? null);
    this.#defaultAsk = options.defaultAsk;
    this.#spawnAsk = options.spawnAsk ?? options.defaultAsk;
    this.#rows = new SessionRows(store, hub, {
      isOnline: (id) => this.#links.isOnline(id),
      askOf: (id) => this.askOf(id),
      waiting: options.waiting,
      mergeRequest: options.mergeRequest,
    });
  }

  /** Late wiring of the spawner's worker states: what `container` (and a crash's end) says for a session. */
  setContainers(containerOf: (sessionId: string) => ContainerView | null): void {
    this.#rows.containerOf = containerOf;
  }

  /** Late wiring of the approvals owner, which is built on this registry. */
  setWaiting(waiting: (sessionId: string) => number): void {
    this.#rows.waiting = waiting;
  }

  /** Late wiring of the budgets owner: what a session's row shows of its budget. */
  setBudgets(budgetOf: (sessionId: string) => BudgetGlance | undefined): void {
    this.#rows.budgetOf = budgetOf;
  }

  /** Late wiring of the merge requests owner, which is built after this registry. */
  setMergeRequests(mergeRequest: (sessionId: string) => SessionMergeRequest | undefined): void {
    this.#rows.mergeRequest = mergeRequest;
  }

  /**
   * A plugin said hello: store its snapshot, make `link` the session's socket (closing an older one with 4000).
   * @returns what `welcome` carries: the committed lastSeq (anything still queued from an older socket included)
   * and the session's ask set.
   */
  connect(info: SessionInfo, link: PluginLink): { lastSeq: number; ask: AskSet } {
    const lastSeq = this.#ingest.committedSeq(info.id);
    this.#store.upsertSession(info);
    this.#links.attach(info.id, link);
    this.#rows.glances.follow(info.id);
    this.touch(info.id);
    return { lastSeq, ask: this.askOf(info.id) };
  }

  /**
   * `connect` with several replicas: claim the session in the shared database and bring this replica's copy up
   * to its log before the plugin is welcomed (its next events follow what the copy has); then the commands
   * queued for it are handed over (after the welcome: call `welcomed`).
   * @param notAfter when (ms epoch) the claim is too late to be made: it is not (the hello's deadline).
   * @param gone aborted when the socket closed or its hello took too long: a claim that comes back after that
   *   is released at once.
   * @throws when the shared database cannot be reached, or `gone` was aborted (the socket is closed; the
   *   plugin comes back).
   */
  async connectShared(
    info: SessionInfo,
    link: PluginLink,
    notAfter: number,
    gone: AbortSignal,
  ): Promise<{ lastSeq: number; ask: AskSet }> {
    const claimed = await this.#links.claim(info, notAfter, gone);
    this.#store.upsertSession(info, claimed.ask ? { ask: claimed.ask } : {});
    await this.#links.catchUp(info.id, claimed.epoch, gone);
    this.#links.attach(info.id, link, claimed.epoch);
    this.#rows.glances.follow(info.id);
    this.touch(info.id);
    return { lastSeq: claimed.lastSeq, ask: this.askOf(info.id) };
  }

  /**
   * The plugin of a shared session got its welcome (and what it supports is known): it is online from now
   * on, and the commands waiting for it are handed over.
   */
  welcomed(sessionId: string): void {
    this.#links.welcomed(sessionId);
    this.touch(sessionId);
    this.#links.shared?.take(sessionId);
  }

  /**
   * A command the shared queue handed to this replica: write it to the session's socket here.
   * @returns false when the session has no socket here (the command waits for the next holder).
   */
  deliver(frame: DaemonFrame & { type: CommandType }): boolean {
    const link = this.#links.here(frame.sessionId);
    if (!link) return false;
    // The ask set is the session row's: a `policy` sent from another replica changes this copy's too.
    if (frame.type === "policy") this.#setAsk(frame.sessionId, frame.ask);
    link.send(frame);
    return true;
  }

  /** Another replica claimed the session: close its socket here, which can no longer store anything. */
  fenced(sessionId: string): void {
    this.#links.here(sessionId)?.close(CloseCode.replaced, "the session was claimed by another replica");
  }

  /**
   * Forget `link` once its socket closed or said bye. Only the session's current socket takes it offline.
   * @returns true when the session went offline.
   */
  disconnect(sessionId: string, link: PluginLink): boolean {
    if (!this.#links.detach(sessionId, link)) return false;
    this.#store.setIdle(sessionId);
    this.#rows.glances.unfollow(sessionId);
    this.touch(sessionId);
    return true;
  }

  /**
   * List a session that is about to start (a spawned container), offline, with its own ask set (the spawn
   * default without one). The snapshot of a session that already said hello is kept. With replicas it
   * resolves once the shared row holds both: the worker's hello may reach any replica, whose `welcome` reads
   * the ask set from that row, and the others list the session before it says hello.
   */
  async register(info: SessionInfo, ask?: AskSet): Promise<void> {
    this.#store.upsertSession(info, { keepSnapshot: true, ask: ask ?? this.#spawnAsk });
    this.touch(info.id);
    await this.#links.shared?.register(info, ask ?? this.#spawnAsk);
  }

  /**
   * Replace a session's ask set and tell its plugin when online.
   * @throws {NotFoundError} when the session is unknown.
   */
  setPolicy(sessionId: string, ask: AskSet): AskSet {
    if (!this.#store.getSession(sessionId)) throw sessionNotFound(sessionId);
    this.#setAsk(sessionId, ask);
    this.#links.sendPolicy(sessionId, ask, () => this.#frame(sessionId, { type: "policy", ask }));
    return ask;
  }

  #setAsk(sessionId: string, ask: AskSet): void {
    const row = this.#store.getSession(sessionId);
    if (!row) return;
    this.#store.upsertSession(row, { keepSnapshot: true, ask });
    this.touch(sessionId);
  }

  /** The ask set in force for a session: its own, or the daemon's default. */
  askOf(sessionId: string): AskSet {
    return this.#store.askOf(sessionId) ?? this.#defaultAsk;
  }

  /**
   * Delete an offline session and its whole history.
   * @throws {ConflictError} while it is online; {NotFoundError} when unknown.
   */
  remove(sessionId: string): void {
    // A live plugin would only bring the session back, with a history that no longer starts at seq 1.
    if (this.#links.isOnline(sessionId)) {
      throw new ConflictError(`Session "${sessionId}" is online: end it (or stop its container) first`);
    }
    this.#ingest.flushSession(sessionId); // nothing of it may still wait for the disk
    if (!this.#store.deleteSession(sessionId)) throw sessionNotFound(sessionId);
    this.#links.shared?.deleteSession(sessionId).catch((error) =>
      console.error(
        `lvmh: session ${sessionId}: not deleted from the shared database: ${(error as Error).message}`,
      )
    );
    this.#rows.glances.forget(sessionId);
    this.#rows.removed(sessionId);
  }

  /** Another replica made a session's row: list it here too (offline until its holder is seen). */
  createdElsewhere(info: SessionInfo): void {
    this.#store.upsertSession(info, { keepSnapshot: true });
    this.touch(info.id);
  }

  /**
   * Another replica deleted the session: remove it from this replica's copy and tell the browsers here.
   * @returns false when the copy had no such session, or a plugin here made it again meanwhile (kept).
   */
  removedElsewhere(sessionId: string): boolean {
    if (this.#links.here(sessionId) || !this.#store.deleteSession(sessionId)) return false;
    this.#rows.glances.forget(sessionId);
    this.#rows.removed(sessionId);
    return true;
  }

  /** How many sessions have their live socket on this daemon (the sessions it holds). */
  get onlineCount(): number {
    return this.#links.count;
  }

  /** True when the session has a live socket (here, or on another replica of a shared database). */
  isOnline(sessionId: string): boolean {
    return this.#links.isOnline(sessionId);
  }

  /** One session, or null. */
  get(sessionId: string): SessionSummary | null {
    return this.#rows.get(sessionId);
  }

  /** Every session, most recent activity first, as the list shows them (without `models`). */
  list(): SessionSummary[] {
    return this.#rows.list();
  }

  /**
   * Send a command to a session's plugin.
   * @throws {NotFoundError} when the session is unknown; {ConflictError} when it has no live socket.
   */
  send(sessionId: string, command: Command): void {
    this.#links.send(this.#linkOf(sessionId), this.#frame(sessionId, command));
  }

  /**
   * Prompt a live session: check its images, keep them, send the `prompt` frame (answered by a
   * `command_result` for its promptId). Images are kept (committed) before the frame leaves, so the
   * conversation can always show what pi got, and only once the session is known to be live, so a refused
   * prompt leaves nothing behind; nothing here awaits, so the session cannot go away in between.
   * @returns what to audit.
   * @throws {InvalidError} or {TooLargeError} for images that may not go (see `checkImages`);
   *   {NotFoundError} when the session is unknown; {ConflictError} when it has no live socket.
   */
  prompt(sessionId: string, request: PromptRequest): SentPrompt {
    const images = request.images?.length ? checkImages(request.images) : undefined;
    const link = this.#linkOf(sessionId);
    const { message, deliverAs, by } = request;
    const promptId = request.promptId ?? crypto.randomUUID();
    const stored = images ? request.kept ?? this.#keepImages(sessionId, images) : undefined;
    this.#links.send(
      link,
      this.#frame(sessionId, {
        type: "prompt",
        promptId,
        commandId: promptId,
        message,
        deliverAs,
        by,
        ...(request.source ? { source: request.source } : {}),
        ...(images ? { images } : {}),
      }),
    );
    return { promptId, message, deliverAs, ...(stored ? { images: stored } : {}) };
  }

  /**
   * With replicas, a prompt's images go to the shared `log` before `prompt` sends them (as `kept`): the caller
   * awaits this first, so the frame leaves only once every replica can serve them. Checked and refused here
   * as `prompt` would (bad images, unknown or offline session), so a refused prompt keeps nothing; a session
   * that goes offline during the await leaves its images until the session is deleted.
   * @throws as `prompt`.
   */
  keepShared(sessionId: string, images: readonly PromptImage[], log: ImageLog): Promise<StoredImageRef[]> {
    const checked = checkImages(images);
    this.#linkOf(sessionId);
    return log.put(sessionId, checked);
  }

  /** Send a command if the session is online; false when it is not (it will be sent again on reconnect). */
  trySend(sessionId: string, command: Command): boolean {
    return this.#links.trySend(this.#frame(sessionId, command));
  }

  /** Note that a session's row changed (events committed, approvals); browsers hear of it within a tick. */
  touch(sessionId: string): void {
    this.#rows.touch(sessionId);
  }

  /** Close every plugin socket and stop publishing (shutdown). */
  closeAll(code: number, reason: string): void {
    this.#rows.stop(); // the glances' close below writes what is left
    this.#links.closeAll(code, reason);
    this.#rows.glances.close();
  }

  #frame(sessionId: string, command: Command): DaemonFrame & { type: CommandType } {
    return { v: PROTOCOL_VERSION, sessionId, seq: 0, ts: Date.now(), ...command } as DaemonFrame & {
      type: CommandType;
    };
  }

  /**
   * The live link of a session (null for one held by another replica).
   * @throws {NotFoundError} when unknown; {ConflictError} when offline.
   */
  #linkOf(sessionId: string): PluginLink | null {
    const link = this.#links.live(sessionId);
    if (link) return link;
    if (this.#links.heldElsewhere(sessionId) && this.#store.getSession(sessionId)) return null;
    if (!this.#store.getSession(sessionId)) throw sessionNotFound(sessionId);
    throw sessionOffline(sessionId);
  }

  #keepImages(sessionId: string, images: readonly PromptImage[]): StoredImageRef[] {
    if (!this.#images) throw new Error("this session registry keeps no images");
    return this.#images.put(sessionId, images);
  }
}
