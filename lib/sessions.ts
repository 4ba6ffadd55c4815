/**
 * The session registry: the one owner of a session's row changes, its live plugin link, its ask set and the one
 * throttled "sessions changed" signal (`session_update` frames with only the rows that changed). Sockets, routes
 * and the spawner ask it; none of them writes a session row or publishes a session frame themselves.
 */
import { CloseCode, PROTOCOL_VERSION } from "./wire.ts";
import type {
  AskSet,
  BudgetGlance,
  ContainerState,
  DaemonFrame,
  PromptImage,
  SessionActivity,
  SessionInfo,
  SessionMergeRequest,
  SessionRecord,
  SessionSummary,
} from "./protocol.ts";
import type { Store } from "./store.ts";
import type { Ingest } from "./ingest.ts";
import type { Hub } from "./hub.ts";
import type { ImageStore, StoredImageRef } from "./image_store.ts";
import type { ImageLog } from "./storage/image_log.ts";
import { checkImages } from "./images.ts";
import { ConflictError, sessionNotFound, sessionOffline } from "./errors.ts";
import { throttle } from "./throttle.ts";
import { SessionGlances } from "./session_glance.ts";
import { titleOf } from "./glance_text.ts";
import type {
  Command,
  CommandType,
  PluginLink,
  PromptRequest,
  SentPrompt,
  SharedSessions,
} from "./session_commands.ts";

export type { Command, CommandType, PluginLink, PromptRequest, SentPrompt, SharedSessions };

/** How often, at most, browsers get a `session_update` while sessions are busy. */
export const SESSION_UPDATE_INTERVAL_MS = 100;
/** How often, at most, the session glances' figures are written to the file (see `#saveGlances`). */
const GLANCE_SAVE_INTERVAL_MS = 1_000;

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
  #links = new Map<string, PluginLink>();
  /** With a shared database: the epoch each socket's claim got. */
  #epochs = new WeakMap<PluginLink, number>();
  /** With a shared database: sessions whose socket here is claimed but not welcomed yet (not online). */
  #welcoming = new Set<string>();
  #shared: SharedSessions | null;
  #changed = new Set<string>();
  #removed = new Set<string>();
  #publish = throttle(() => this.#flushChanges(), SESSION_UPDATE_INTERVAL_MS);
  /**
   * The glances' figures go to the file at most this often, in a task of their own: written in each list
   * flush (10 a second while sessions work) they were a quarter of its time, and a delta arriving meanwhile
   * waited. What a SIGKILL loses of them is caught up from the log at the next start.
   */
  #saveGlances = throttle(() => this.#glances.save(), GLANCE_SAVE_INTERVAL_MS);
  #defaultAsk: AskSet;
  #spawnAsk: AskSet;
  #waiting: (sessionId: string) => number;
  #mergeRequest: (sessionId: string) => SessionMergeRequest | undefined;
  #containerOf: (sessionId: string) => ContainerView | null = () => null;
  #budgetOf: (sessionId: string) => BudgetGlance | undefined = () => undefined;
  #images: ImageStore | null;
  #glances: SessionGlances;
  #store: Store;
  #ingest: Ingest;
  #hub: Hub;

  constructor(store: Store, ingest: Ingest, hub: Hub, options: SessionsOptions) {
    this.#store = store;
    this.#ingest = ingest;
    this.#hub = hub;
    this.#images = options.images ?? null;
    this.#shared = options.shared ?? null;
    this.#defaultAsk = options.defaultAsk;
    this.#spawnAsk = options.spawnAsk ?? options.defaultAsk;
    this.#waiting = options.waiting ?? (() => 0);
    this.#mergeRequest = options.mergeRequest ?? (() => undefined);
    // What the list shows of each session, from the hub's events; a file from before it is backfilled here.
    this.#glances = new SessionGlances(
      store.db,
      (id, after, limit) => store.events(id, { after, limit }),
      hub,
      (id) => this.touch(id),
    );
    this.#glances.catchUpAll(store.listSessions());
  }

  /** Late wiring of the spawner's worker states: what `container` (and a crash's end) says for a session. */
  setContainers(containerOf: (sessionId: string) => ContainerView | null): void {
    this.#containerOf = containerOf;
  }

  /** Late wiring of the approvals owner, which is built on this registry. */
  setWaiting(waiting: (sessionId: string) => number): void {
    this.#waiting = waiting;
  }

  /** Late wiring of the budgets owner: what a session's row shows of its budget. */
  setBudgets(budgetOf: (sessionId: string) => BudgetGlance | undefined): void {
    this.#budgetOf = budgetOf;
  }

  /** Late wiring of the merge requests owner, which is built after this registry. */
  setMergeRequests(mergeRequest: (sessionId: string) => SessionMergeRequest | undefined): void {
    this.#mergeRequest = mergeRequest;
  }

  /**
   * A plugin said hello: store its snapshot, make `link` the session's socket (closing an older one with 4000).
   * @returns what `welcome` carries: the committed lastSeq (anything still queued from an older socket included)
   * and the session's ask set.
   */
  connect(info: SessionInfo, link: PluginLink): { lastSeq: number; ask: AskSet } {
    const lastSeq = this.#ingest.committedSeq(info.id);
    this.#store.upsertSession(info);
    const old = this.#links.get(info.id);
    this.#links.set(info.id, link);
    if (old && old !== link) old.close(CloseCode.replaced, "replaced by a newer connection");
    this.#glances.follow(info.id);
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
    const shared = this.#shared!;
    await this.#ingest.settled(info.id);
    const claimed = await shared.claim(info, notAfter);
    const giveUp = () => {
      if (!gone.aborted) return;
      shared.release(info.id, claimed.epoch);
      throw gone.reason;
    };
    giveUp();
    this.#store.upsertSession(info, claimed.ask ? { ask: claimed.ask } : {});
    await shared.catchUp(info.id);
    giveUp();
    this.#epochs.set(link, claimed.epoch);
    const old = this.#links.get(info.id);
    this.#links.set(info.id, link);
    this.#welcoming.add(info.id);
    if (old && old !== link) old.close(CloseCode.replaced, "replaced by a newer connection");
    this.#glances.follow(info.id);
    this.touch(info.id);
    return { lastSeq: claimed.lastSeq, ask: this.askOf(info.id) };
  }

  /**
   * The plugin of a shared session got its welcome (and what it supports is known): it is online from now
   * on, and the commands waiting for it are handed over.
   */
  welcomed(sessionId: string): void {
    this.#welcoming.delete(sessionId);
    this.touch(sessionId);
    this.#shared?.take(sessionId);
  }

  /**
   * A command the shared queue handed to this replica: write it to the session's socket here.
   * @returns false when the session has no socket here (the command waits for the next holder).
   */
  deliver(frame: DaemonFrame & { type: CommandType }): boolean {
    const link = this.#links.get(frame.sessionId);
    if (!link) return false;
    // The ask set is the session row's: a `policy` sent from another replica changes this copy's too.
    if (frame.type === "policy") this.#setAsk(frame.sessionId, frame.ask);
    link.send(frame);
    return true;
  }

  /** Another replica claimed the session: close its socket here, which can no longer store anything. */
  fenced(sessionId: string): void {
    this.#links.get(sessionId)?.close(CloseCode.replaced, "the session was claimed by another replica");
  }

  /**
   * Forget `link` once its socket closed or said bye. Only the session's current socket takes it offline.
   * @returns true when the session went offline.
   */
  disconnect(sessionId: string, link: PluginLink): boolean {
    if (this.#links.get(sessionId) !== link) return false;
    this.#links.delete(sessionId);
    this.#welcoming.delete(sessionId);
    this.#ingest.flushSession(sessionId); // a `bye` still queued is stored before the list says offline
    const epoch = this.#epochs.get(link);
    const shared = this.#shared;
    // The claim goes once what the socket sent is stored (its `bye` included): appends need the epoch.
    if (shared && epoch !== undefined) {
      void this.#ingest.settled(sessionId).then(() => shared.release(sessionId, epoch));
    }
    this.#store.setIdle(sessionId);
    this.#glances.unfollow(sessionId);
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
    await this.#shared?.register(info, ask ?? this.#spawnAsk);
  }

  /**
   * Replace a session's ask set and tell its plugin when online.
   * @throws {NotFoundError} when the session is unknown.
   */
  setPolicy(sessionId: string, ask: AskSet): AskSet {
    if (!this.#store.getSession(sessionId)) throw sessionNotFound(sessionId);
    this.#setAsk(sessionId, ask);
    if (this.#shared) {
      const shared = this.#shared;
      // The row first, then the frame: a plugin welcomed in between reads the new set from the row.
      shared.setAsk(sessionId, ask).then(
        () => this.#isOnline(sessionId) && shared.send(this.#frame(sessionId, { type: "policy", ask })),
        (error) =>
          console.error(`lvmh: session ${sessionId}: policy not stored: ${(error as Error).message}`),
      );
    } else this.#links.get(sessionId)?.send(this.#frame(sessionId, { type: "policy", ask }));
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
    if (this.#isOnline(sessionId)) {
      throw new ConflictError(`Session "${sessionId}" is online: end it (or stop its container) first`);
    }
    this.#ingest.flushSession(sessionId); // nothing of it may still wait for the disk
    if (!this.#store.deleteSession(sessionId)) throw sessionNotFound(sessionId);
    this.#shared?.deleteSession(sessionId).catch((error) =>
      console.error(
        `lvmh: session ${sessionId}: not deleted from the shared database: ${(error as Error).message}`,
      )
    );
    this.#glances.forget(sessionId);
    this.#changed.delete(sessionId);
    this.#removed.add(sessionId);
    this.#publish();
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
    if (this.#links.has(sessionId) || !this.#store.deleteSession(sessionId)) return false;
    this.#glances.forget(sessionId);
    this.#changed.delete(sessionId);
    this.#removed.add(sessionId);
    this.#publish();
    return true;
  }

  /** How many sessions have their live socket on this daemon (the sessions it holds). */
  get onlineCount(): number {
    return this.#links.size;
  }

  /** True when the session has a live socket (here, or on another replica of a shared database). */
  isOnline(sessionId: string): boolean {
    return this.#isOnline(sessionId);
  }

  #isOnline(sessionId: string): boolean {
    if (this.#links.has(sessionId)) return !this.#welcoming.has(sessionId);
    return this.#shared?.heldElsewhere(sessionId) ?? false;
  }

  /** One session, or null. */
  get(sessionId: string): SessionSummary | null {
    const row = this.#store.getSession(sessionId);
    return row ? this.#summary(row) : null;
  }

  /** Every session, most recent activity first, as the list shows them (without `models`, see `listed`). */
  list(): SessionSummary[] {
    return this.#store.listSessions().map((row) => listed(this.#summary(row)));
  }

  /**
   * Send a command to a session's plugin.
   * @throws {NotFoundError} when the session is unknown; {ConflictError} when it has no live socket.
   */
  send(sessionId: string, command: Command): void {
    this.#sendFrame(this.#linkOf(sessionId), this.#frame(sessionId, command));
  }

  /** Write a command frame to the session's socket here, or queue it for its holder on a shared database. */
  #sendFrame(link: PluginLink | null, frame: DaemonFrame & { type: CommandType }): void {
    if (this.#shared) this.#shared.send(frame);
    else link?.send(frame);
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
    this.#sendFrame(
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
    if (this.#shared && !this.#isOnline(sessionId)) {
      // This replica's view of the other replicas' sessions lags their claims by a poll: the shared row says.
      this.#shared.send(this.#frame(sessionId, command), { ifHeld: true });
      return false;
    }
    if (!this.#isOnline(sessionId)) return false;
    this.#sendFrame(this.#links.get(sessionId) ?? null, this.#frame(sessionId, command));
    return true;
  }

  /** Note that a session's row changed (events committed, approvals); browsers hear of it within a tick. */
  touch(sessionId: string): void {
    this.#removed.delete(sessionId);
    this.#changed.add(sessionId);
    this.#publish();
  }

  /** Close every plugin socket and stop publishing (shutdown). */
  closeAll(code: number, reason: string): void {
    this.#publish.cancel();
    this.#saveGlances.cancel(); // the glances' close below writes what is left
    for (const link of this.#links.values()) link.close(code, reason);
    this.#links.clear();
    this.#glances.close();
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
    const link = this.#links.get(sessionId);
    if (link && !this.#welcoming.has(sessionId)) return link;
    if (!link && this.#shared?.heldElsewhere(sessionId) && this.#store.getSession(sessionId)) return null;
    if (!this.#store.getSession(sessionId)) throw sessionNotFound(sessionId);
    throw sessionOffline(sessionId);
  }

  #keepImages(sessionId: string, images: readonly PromptImage[]): StoredImageRef[] {
    if (!this.#images) throw new Error("this session registry keeps no images");
    return this.#images.put(sessionId, images);
  }

  #summary(row: SessionRecord): SessionSummary {
    const online = this.#isOnline(row.id);
    const waiting = this.#waiting(row.id);
    const g = this.#glances.of(row.id, row.lastSeq);
    const state = waiting > 0 ? "waiting" : !online ? "offline" : row.state;
    const activity: SessionActivity = { state };
    const tool = state === "waiting" ? g.asking ?? g.tool : state === "running" ? g.tool : null;
    const line = state === "running" ? g.streamLine ?? g.lastLine : g.lastLine;
    if (tool) activity.tool = tool;
    if (line) activity.line = line;
    const at = Math.max(row.lastEventAt ?? 0, g.activityAt ?? 0, online ? g.streamAt ?? 0 : 0);
    const mergeRequest = this.#mergeRequest(row.id);
    const budget = this.#budgetOf(row.id);
    return {
      ...row,
      online,
      ask: this.askOf(row.id),
      waiting,
      title: titleOf(row, g.firstPrompt),
      activity,
      cost: g.cost,
      lastActivityAt: at || null,
      ...(mergeRequest ? { mergeRequest } : {}),
      ...(budget ? { budget } : {}),
      ...containerFields(this.#containerOf(row.id)),
    };
  }

  #flushChanges(): void {
    const sessions: SessionSummary[] = [];
    for (const id of this.#changed) {
      const row = this.get(id);
      if (row) sessions.push(listed(row));
    }
    const removed = [...this.#removed];
    this.#saveGlances();
    this.#changed.clear();
    this.#removed.clear();
    if (sessions.length || removed.length) this.#hub.broadcast({ type: "session_update", sessions, removed });
  }
}

/** A spawned session's worker as the spawner reports it; a crash says how it ended. */
export interface ContainerView {
  state: ContainerState;
  exitCode: number | null;
  reason: string | null;
}

/** `container`, and `exitCode`/`reason` for a crashed worker only. */
function containerFields(c: ContainerView | null): Pick<SessionSummary, "container" | "exitCode" | "reason"> {
  if (!c) return { container: null };
  if (c.state !== "crashed") return { container: c.state };
  return { container: c.state, exitCode: c.exitCode ?? -1, reason: c.reason ?? "unknown" };
}

/**
 * A session as lists carry it (`GET /api/sessions`, `session_list`, `session_update`): without the models it
 * may switch to. They are up to 200 entries per session and change about never, while a working session's row
 * is sent again on every glance change (3,000 sessions of 12 models made a 5.3 MB `session_list`). One
 * session's own answer (`GET /api/sessions/:id`, its page) and its `session_info` events have them.
 */
function listed(s: SessionSummary): SessionSummary {
  if (!s.models) return s;
  const { models: _models, ...row } = s;
  return row;
}
