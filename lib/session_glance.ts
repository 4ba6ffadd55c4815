/**
 * What the sessions list shows of each session beyond its row — first prompt (for the title), the tool that
 * runs or waits for a person, the last line of text (streamed now, else the last answer's), the cost so far
 * and the latest activity — kept incrementally by the daemon, so the list costs no event reads and its cost is
 * exact over the whole log.
 *
 * It observes committed events the way the notification watcher does: one hub follower per online session
 * (joined without broadcasts), which receives exactly what browsers receive — persisted events after their
 * commit and streamed deltas. Persisted figures go to `session_glance` once per tick; a glance behind its
 * session's lastSeq (an older file, a SIGKILL before the write, a missed frame) is caught up from the stored
 * events, so every figure is a function of the log. `lib/session_rows.ts` holds the one instance.
 */
import type { DatabaseSync } from "node:sqlite";
import { eventObject, type Hub, type Subscriber } from "./hub.ts";
import type { AgentEvent, StoredEvent } from "./protocol.ts";
import { type GlanceRecord, GlanceStore } from "./glance_store.ts";
import { firstLine, lastLine, streamTail, surelyHasLine, toolHint } from "./glance_text.ts";
import { wholeFileError } from "./write_gate.ts";

export type { GlanceRecord } from "./glance_store.ts";

/** A glance as the registry reads it: the persisted figures plus the line streamed now. */
export interface Glance extends GlanceRecord {
  /** The last line of the text streamed since the latest message started; null when none streams. */
  streamLine: string | null;
  /** ts of the latest streamed delta; null when none was seen. */
  streamAt: number | null;
}

/** A glance of nothing seen yet. */
export const EMPTY_RECORD: GlanceRecord = {
  seq: 0,
  firstPrompt: null,
  lastLine: null,
  tool: null,
  asking: null,
  cost: 0,
  activityAt: null,
};

/** Streamed text kept per session: only its last line is shown. */
const STREAM_TAIL = 2000;
/**
 * A row whose only change is its streamed line is announced at most this often (each announcement is a whole
 * summary to every browser; a glance needs no more than a couple of lines a second).
 */
export const LINE_INTERVAL_MS = 500;
/** Events read per page while catching up from the store. */
const CATCH_UP_PAGE = 5000;

/** Reads a page of a session's stored events above `after`, seq ascending (`Store.events`). */
export type ReadEvents = (id: string, after: number, limit: number) => StoredEvent[];

/** One session's glance in memory. */
export interface LiveGlance {
  /** The figures; `lastLine` may lag `answers` until `settled()` makes it. */
  record: GlanceRecord;
  /**
   * Assistant answers applied since the shown line was last made, oldest first. Making a line reads the
   * answer's Markdown (a dozen patterns), so it is made once per tick when the row is read or saved, from the
   * newest answer that has a line, not once per stored message.
   */
  answers: string[];
  /** Text streamed since the latest message started (a bounded tail). */
  stream: string;
  /** The seq of the latest streamed delta applied (deltas older than the persisted seq are stale). */
  streamSeq: number;
  streamAt: number | null;
}

/** A fresh in-memory glance. */
export function liveGlance(record: GlanceRecord = EMPTY_RECORD): LiveGlance {
  return { record: { ...record }, answers: [], stream: "", streamSeq: 0, streamAt: null };
}

/** Answers kept unread before their line is made anyway (bounds memory; the result is the same). */
const PENDING_ANSWERS_MAX = 16;

/** The glance's figures with the shown line made from the answers applied since it was last made. */
export function settled(g: LiveGlance): GlanceRecord {
  if (g.answers.length === 0) return g.record;
  let line: string | null = null;
  for (let i = g.answers.length - 1; i >= 0 && line === null; i--) line = lastLine(g.answers[i]);
  g.answers = [];
  if (line !== null) g.record = { ...g.record, lastLine: line };
  return g.record;
}

/**
 * A stored or published event as the glance reads it. The store and the hub hold only frames that passed
 * `AgentEvent`, so this is where their loose `StoredEvent` shape is narrowed; it copies nothing.
 */
function asAgentEvent(e: Readonly<StoredEvent>): AgentEvent {
  return e as unknown as AgentEvent;
}

/**
 * Apply one event (persisted ones once each, by seq; deltas while they are newer than the persisted seq).
 * Every event type is named below, so a new one fails the type check until this says what the list shows of it.
 * @returns "record" when a persisted figure changed, "line" when only the streamed line did, else null
 */
export function applyEvent(g: LiveGlance, e: AgentEvent): "record" | "line" | null {
  if (e.type === "message_update") {
    // Checked at run time too: the fast path of the socket vouches for the hot shapes without zod.
    if (e.kind === "thinking" || e.seq < g.record.seq || typeof e.delta !== "string") return null;
    const text = g.stream + e.delta;
    g.stream = text.length > STREAM_TAIL ? text.slice(-STREAM_TAIL) : text;
    g.streamSeq = e.seq;
    g.streamAt = e.ts;
    // The shown line is the tail of the last line: any visible character changes it. (Not compared here:
    // the line is made once per tick when the row is read, not once per delta.)
    return /\S/.test(e.delta) ? "line" : null;
  }
  if (e.seq <= g.record.seq) return null;
  const r = { ...g.record, seq: e.seq, activityAt: Math.max(g.record.activityAt ?? 0, e.ts) };
  switch (e.type) {
    case "message_start":
      g.stream = "";
      break;
    case "message_end": {
      const m: { role?: unknown; text?: unknown } = e.message ?? {};
      const text = typeof m.text === "string" ? m.text : "";
      if (m.role === "user" && r.firstPrompt === null) r.firstPrompt = firstLine(text);
      // Older answers matter only while the newest has no line: one that surely has one replaces them (making
      // lines of the bounded list's answers was 5 % of the daemon's ingest of a batch of answers).
      if (m.role === "assistant") {
        if (surelyHasLine(text)) g.answers = [text];
        else g.answers.push(text);
      }
      g.stream = "";
      break;
    }
    case "tool_execution_start":
      r.tool = toolHint(String(e.toolName ?? "tool"), e.args);
      break;
    case "tool_execution_end":
      r.tool = null;
      break;
    case "approval_request":
      r.asking = toolHint(String(e.toolName ?? "tool"), e.args);
      break;
    case "approval_resolved":
      r.asking = null;
      break;
    case "agent_end": {
      const usage: { totalCost?: unknown } = e.usage ?? {};
      const cost = typeof usage.totalCost === "number" && Number.isFinite(usage.totalCost)
        ? usage.totalCost
        : 0;
      r.cost += cost;
      r.tool = null;
      r.asking = null;
      g.stream = "";
      break;
    }
    case "bye":
      r.tool = null;
      r.asking = null;
      g.stream = "";
      break;
    case "tool_execution_update":
    case "agent_start":
    case "agent_settled":
    case "session_info":
    case "buffer_overflow":
    case "command_result":
    case "session_notice":
      // Only the seq and the time of the latest activity move.
      break;
    default:
      e satisfies never;
  }
  g.record = r;
  // A long catch-up from the store reads no row until its end: keep what it holds of answers bounded.
  if (g.answers.length >= PENDING_ANSWERS_MAX) settled(g);
  return "record";
}

/**
 * After a save failed for a reason other than the whole file refusing writes, the next try waits this long.
 * (While the file refuses writes — locked, full — the store's write gate decides when to try again, for every
 * writer at once: each try on a locked file stops the event loop for the busy timeout.) The figures meanwhile
 * stay exact in memory.
 */
const GLANCE_SAVE_RETRY_MS = 10_000;

/** Every session's glance: kept live from the hub, persisted per tick, caught up from the store when behind. */
export class SessionGlances {
  #live = new Map<string, LiveGlance>();
  #followers = new Map<string, Subscriber>();
  #dirty = new Set<string>();
  #table: GlanceStore;
  #saveFailed = false;
  /** No save is tried before this (performance.now()): a locked file makes every try wait the busy timeout. */
  #saveRetryAt = 0;
  /** Sessions whose streamed line changed since the last line announcement. */
  #linePending = new Set<string>();
  #lineTimer: ReturnType<typeof setTimeout> | undefined;

  /**
   * @param db the store's database (the table lives beside the events)
   * @param read the store's event reader, for catching up
   * @param hub where committed events and deltas are published
   * @param changed told when what the list shows of a session changed (the registry coalesces per tick)
   */
  constructor(
    db: DatabaseSync,
    private readonly read: ReadEvents,
    private readonly hub: Hub,
    private readonly changed: (sessionId: string) => void,
  ) {
    this.#table = new GlanceStore(db);
    for (const [id, record] of this.#table.all()) this.#live.set(id, liveGlance(record));
  }

  /**
   * Bring the glances of `sessions` up to their lastSeq (the one-time backfill of a file from before the table,
   * or the events committed after the last write before a SIGKILL) and drop glances of unknown sessions.
   */
  catchUpAll(sessions: readonly { id: string; lastSeq: number }[]): void {
    const known = new Set(sessions.map((s) => s.id));
    for (const id of [...this.#live.keys()]) {
      if (!known.has(id)) this.forget(id);
    }
    for (const s of sessions) this.#catchUp(s.id, s.lastSeq);
    this.save();
  }

  /** A session's glance, caught up to `lastSeq` first when it is behind. */
  of(sessionId: string, lastSeq: number): Glance {
    const g = this.#catchUp(sessionId, lastSeq);
    return { ...settled(g), streamLine: g.stream ? streamTail(g.stream) : null, streamAt: g.streamAt };
  }

  /** Follow an online session's events and deltas (idempotent). */
  follow(sessionId: string): void {
    if (this.#followers.has(sessionId)) return;
    const sub: Subscriber = {
      send: (data) => this.#frame(sessionId, data),
      // The hub's events as objects: parsing each frame back cost more than the rest of a publish under load.
      events: (_id, after, evs) =>
        this.#apply(sessionId, after, evs.map((e) => asAgentEvent(eventObject(e)))),
      bufferedAmount: () => 0,
      close: () => this.#followers.delete(sessionId),
    };
    this.#followers.set(sessionId, sub);
    this.hub.join(sub, { broadcasts: false });
    this.hub.subscribe(sub, sessionId);
  }

  /** Stop following a session that went offline; nothing streams any more. */
  unfollow(sessionId: string): void {
    const sub = this.#followers.get(sessionId);
    if (sub) this.hub.leave(sub);
    this.#followers.delete(sessionId);
    const g = this.#live.get(sessionId);
    if (g) g.stream = "";
  }

  /** Forget a deleted session. */
  forget(sessionId: string): void {
    this.unfollow(sessionId);
    this.#live.delete(sessionId);
    this.#dirty.delete(sessionId);
    this.#table.delete(sessionId);
  }

  /** Write the glances whose persisted figures changed (once per tick). A failed write is retried later. */
  save(): void {
    if (this.#dirty.size === 0 || performance.now() < this.#saveRetryAt) return;
    // The file refuses writes for now: keep the rows dirty, a later tick writes them once the gate opens.
    if (this.#table.gate.refusal) return;
    const rows: [string, GlanceRecord][] = [];
    for (const id of this.#dirty) {
      const g = this.#live.get(id);
      if (g) rows.push([id, settled(g)]);
    }
    try {
      this.#table.save(rows);
      this.#dirty.clear();
      this.#saveFailed = false;
    } catch (error) {
      // A read-only or full disk: the figures stay exact (they are caught up from the log on restart).
      if (!this.#saveFailed) console.error(`lvmh: cannot save session glances: ${(error as Error).message}`);
      this.#saveFailed = true;
      if (!wholeFileError(error)) this.#saveRetryAt = performance.now() + GLANCE_SAVE_RETRY_MS;
    }
  }

  /** Stop following everything and write what is left (shutdown). */
  close(): void {
    clearTimeout(this.#lineTimer);
    this.#lineTimer = undefined;
    this.#linePending.clear();
    for (const id of [...this.#followers.keys()]) this.unfollow(id);
    this.save();
  }

  #get(sessionId: string): LiveGlance {
    let g = this.#live.get(sessionId);
    if (!g) this.#live.set(sessionId, g = liveGlance());
    return g;
  }

  #catchUp(sessionId: string, lastSeq: number): LiveGlance {
    const g = this.#get(sessionId);
    while (g.record.seq < lastSeq) {
      const page = this.read(sessionId, g.record.seq, CATCH_UP_PAGE);
      if (page.length === 0) {
        // Nothing stored up to lastSeq (a seq gap): the glance covers everything there is.
        g.record = { ...g.record, seq: lastSeq };
        break;
      }
      for (const e of page) applyEvent(g, asAgentEvent(e));
      this.#dirty.add(sessionId);
    }
    return g;
  }

  #frame(sessionId: string, data: string): void {
    let frame: { type?: string; after?: number; events?: StoredEvent[] };
    try {
      frame = JSON.parse(data);
    } catch {
      return;
    }
    if (frame.type !== "events" || !Array.isArray(frame.events)) return;
    this.#apply(sessionId, frame.after, frame.events.map(asAgentEvent));
  }

  #apply(sessionId: string, after: number | undefined, events: readonly AgentEvent[]): void {
    const g = this.#get(sessionId);
    // A frame that starts past what was applied: the events between are read from the store first.
    if (typeof after === "number" && after > g.record.seq) this.#catchUp(sessionId, after);
    let change: "record" | "line" | null = null;
    for (const e of events) {
      const c = applyEvent(g, e);
      if (c === "record") this.#dirty.add(sessionId);
      change = c === "record" || change === "record" ? "record" : c ?? change;
    }
    if (change === "record") {
      this.#linePending.delete(sessionId);
      this.changed(sessionId);
    } else if (change === "line") this.#lineChanged(sessionId);
  }

  /** Announce a streamed line at most once per `LINE_INTERVAL_MS`, the last one included. */
  #lineChanged(sessionId: string): void {
    this.#linePending.add(sessionId);
    this.#lineTimer ??= setTimeout(() => {
      this.#lineTimer = undefined;
      for (const id of this.#linePending) this.changed(id);
      this.#linePending.clear();
    }, LINE_INTERVAL_MS);
  }
}
