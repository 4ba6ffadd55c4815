/**
 * What the session registry (lib/sessions.ts) shows of its sessions: each row as lists and pages carry it
 * (the stored row with its glance, pending approvals, merge request, budget and worker) and the one throttled
 * `session_update` with only the rows that changed. Apart from the registry, which owns the rows' changes, so
 * that it stays about who holds a session and what is sent to it; nothing here writes a row.
 */
import type {
  AskSet,
  BudgetGlance,
  ContainerState,
  SessionActivity,
  SessionMergeRequest,
  SessionRecord,
  SessionSummary,
} from "./protocol.ts";
import type { Store } from "./store.ts";
import type { Hub } from "./hub.ts";
import { throttle } from "./throttle.ts";
import { traced } from "./delta_trace.ts";
import { SessionGlances } from "./session_glance.ts";
import { titleOf } from "./glance_text.ts";

/** How often, at most, browsers get a `session_update` while sessions are busy. */
export const SESSION_UPDATE_INTERVAL_MS = 100;
/** How often, at most, the session glances' figures are written to the file (see `#saveGlances`). */
const GLANCE_SAVE_INTERVAL_MS = 1_000;

/** A spawned session's worker as the spawner reports it; a crash says how it ended. */
export interface ContainerView {
  state: ContainerState;
  exitCode: number | null;
  reason: string | null;
}

/** What a row shows that the registry answers (whether the session is live, its ask set). */
export interface RowSources {
  isOnline(sessionId: string): boolean;
  askOf(sessionId: string): AskSet;
  waiting?: (sessionId: string) => number;
  mergeRequest?: (sessionId: string) => SessionMergeRequest | undefined;
}

/** The sessions' rows as browsers see them, and the throttled signal of which of them changed. */
export class SessionRows {
  /** Pending approvals of a session (the approvals owner, wired late). */
  waiting: (sessionId: string) => number;
  /** A session's merge request (the merge requests owner, wired late). */
  mergeRequest: (sessionId: string) => SessionMergeRequest | undefined;
  /** A session's worker (the spawner, wired late). */
  containerOf: (sessionId: string) => ContainerView | null = () => null;
  /** A session's budget (the budgets owner, wired late). */
  budgetOf: (sessionId: string) => BudgetGlance | undefined = () => undefined;
  /** What the list shows of each session beyond its row; the registry follows online sessions with it. */
  readonly glances: SessionGlances;
  #changed = new Set<string>();
  #removed = new Set<string>();
  #publish = throttle(() => traced("list update", () => this.#flushChanges()), SESSION_UPDATE_INTERVAL_MS);
  /**
   * The glances' figures go to the file at most this often, in a task of their own: written in each list
   * flush (10 a second while sessions work) they were a quarter of its time, and a delta arriving meanwhile
   * waited. What a SIGKILL loses of them is caught up from the log at the next start.
   */
  #saveGlances = throttle(() => traced("glances saved", () => this.glances.save()), GLANCE_SAVE_INTERVAL_MS);
  #store: Store;
  #hub: Hub;
  #sources: RowSources;

  constructor(store: Store, hub: Hub, sources: RowSources) {
    this.#store = store;
    this.#hub = hub;
    this.#sources = sources;
    this.waiting = sources.waiting ?? (() => 0);
    this.mergeRequest = sources.mergeRequest ?? (() => undefined);
    // What the list shows of each session, from the hub's events; a file from before it is backfilled here.
    this.glances = new SessionGlances(
      store.db,
      (id, after, limit) => store.events(id, { after, limit }),
      hub,
      (id) => this.touch(id),
    );
    this.glances.catchUpAll(store.listSessions());
  }

  /** One session as its page shows it, or null. */
  get(sessionId: string): SessionSummary | null {
    const row = this.#store.getSession(sessionId);
    return row ? this.#summary(row) : null;
  }

  /** Every session, most recent activity first, as the list shows them (without `models`, see `listed`). */
  list(): SessionSummary[] {
    return this.#store.listSessions().map((row) => listed(this.#summary(row)));
  }

  /** Note that a session's row changed; browsers hear of it within a tick. */
  touch(sessionId: string): void {
    this.#removed.delete(sessionId);
    this.#changed.add(sessionId);
    this.#publish();
  }

  /** Note that a session was deleted; browsers hear of it within a tick. */
  removed(sessionId: string): void {
    this.#changed.delete(sessionId);
    this.#removed.add(sessionId);
    this.#publish();
  }

  /** Stop publishing and saving on a timer (shutdown; the glances' close writes what is left). */
  stop(): void {
    this.#publish.cancel();
    this.#saveGlances.cancel();
  }

  #summary(row: SessionRecord): SessionSummary {
    const online = this.#sources.isOnline(row.id);
    const waiting = this.waiting(row.id);
    const g = this.glances.of(row.id, row.lastSeq);
    const state = waiting > 0 ? "waiting" : !online ? "offline" : row.state;
    const activity: SessionActivity = { state };
    const tool = state === "waiting" ? g.asking ?? g.tool : state === "running" ? g.tool : null;
    const line = state === "running" ? g.streamLine ?? g.lastLine : g.lastLine;
    if (tool) activity.tool = tool;
    if (line) activity.line = line;
    const at = Math.max(row.lastEventAt ?? 0, g.activityAt ?? 0, online ? g.streamAt ?? 0 : 0);
    const mergeRequest = this.mergeRequest(row.id);
    const budget = this.budgetOf(row.id);
    return {
      ...row,
      online,
      ask: this.#sources.askOf(row.id),
      waiting,
      title: titleOf(row, g.firstPrompt),
      activity,
      cost: g.cost,
      lastActivityAt: at || null,
      ...(mergeRequest ? { mergeRequest } : {}),
      ...(budget ? { budget } : {}),
      ...containerFields(this.containerOf(row.id)),
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
