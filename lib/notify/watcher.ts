/**
 * Turns what the hub broadcasts into notify events, without touching any owner: it joins the hub as one more
 * subscriber (session rows, approvals, spawn jobs) and follows each online session's events with a subscriber
 * of its own (to tell a settled run from a failed one, and a `bye` from a dropped link).
 */
import { eventObject, type Hub, type Subscriber } from "../hub.ts";
import type { AgentEvent, Approval, SessionSummary, SpawnJob } from "../protocol.ts";
import type { NotifyEvent } from "./kinds.ts";

/** What a follower looks at in an event it only has as text; anything else is not even parsed. */
const INTERESTING = /"type":"(?:bye|agent_start|agent_end)"|"stopReason":"(?:error|aborted)"/;

/** Options of the watcher. */
export interface WatcherOptions {
  /** A running session with no event for this long is `session.stalled` (once per quiet spell). */
  stallMs: number;
  /** How often running sessions are checked for a stall. */
  checkEveryMs?: number;
  /**
   * Whether this daemon holds the session's plugin socket. With several replicas every one sees every
   * session's frames; what a session's plugin did (an approval request, a run's end, a stall, its socket
   * dropping) is announced only where it is held. Default: always (a daemon alone holds every session).
   */
  holds?: (sessionId: string) => boolean;
}

interface Seen {
  name: string | null;
  repo: string | null;
  branch: string | null;
  state: string;
  online: boolean;
  lastEventAt: number | null;
  stalledAt: number | null;
  /** Set by a `bye` event, cleared when the session comes back. */
  said: boolean;
  /** Whether this daemon held the session when it was last seen online. */
  held: boolean;
  /** Set by an assistant message that ended in error or abort during this run. */
  failure: string | null;
  follower: Subscriber | null;
  /** The spawned session's worker state last seen (`crashed` is announced once per crash). */
  container: string | null;
}

/** Watches the hub and calls `emit` for each event worth a notification. */
export class Watcher {
  #sessions = new Map<string, Seen>();
  #approvals = new Set<string>();
  #failedJobs = new Set<string>();
  #self: Subscriber;
  #timer: ReturnType<typeof setInterval>;

  constructor(
    private readonly hub: Hub,
    private readonly emit: (event: NotifyEvent) => void,
    private readonly options: WatcherOptions,
  ) {
    this.#self = recorder((data) => this.#frame(data));
    hub.join(this.#self);
    this.#timer = setInterval(() => this.checkStalls(), options.checkEveryMs ?? 30_000);
  }

  /** Seed what is already known (the sessions and approvals at start), so it is not announced as new. */
  prime(sessions: SessionSummary[], pending: Approval[]): void {
    for (const s of sessions) this.#update(s, false);
    for (const a of pending) this.#approvals.add(a.id);
  }

  /** Announce running sessions that have been quiet for longer than the stall time. */
  checkStalls(now = Date.now()): void {
    for (const [id, s] of this.#sessions) {
      if (s.state !== "running" || !s.online || s.lastEventAt === null || s.stalledAt !== null) continue;
      if (now - s.lastEventAt < this.options.stallMs) continue;
      s.stalledAt = now;
      if (!this.#holds(id)) continue;
      this.#emit("session.stalled", id, { minutes: Math.round(this.options.stallMs / 60_000) });
    }
  }

  /** Leave the hub. */
  close(): void {
    clearInterval(this.#timer);
    this.hub.leave(this.#self);
    for (const s of this.#sessions.values()) if (s.follower) this.hub.leave(s.follower);
  }

  #holds(sessionId: string): boolean {
    return this.options.holds?.(sessionId) ?? true;
  }

  #emit(
    type: NotifyEvent["type"],
    sessionId: string | null,
    data: Record<string, unknown>,
    key?: string,
  ): void {
    const s = sessionId ? this.#sessions.get(sessionId) : undefined;
    const context = s ? { sessionName: s.name ?? sessionId, repo: s.repo, branch: s.branch } : {};
    try {
      this.emit({ type, at: Date.now(), sessionId, data: { ...context, ...data }, ...(key ? { key } : {}) });
    } catch (error) {
      console.error(`lvmh: notification ${type} not sent: ${(error as Error).message}`);
    }
  }

  #frame(data: string): void {
    const frame = JSON.parse(data) as { type: string } & Record<string, unknown>;
    if (frame.type === "session_update") {
      for (const s of frame.sessions as SessionSummary[]) this.#update(s, true);
      for (const id of frame.removed as string[]) this.#forget(id);
    } else if (frame.type === "approvals") {
      const pending = frame.pending as Approval[];
      for (const a of pending) {
        if (this.#approvals.has(a.id)) continue;
        this.#approvals.add(a.id);
        if (!this.#holds(a.sessionId)) continue;
        this.#emit("approval.requested", a.sessionId, {
          approvalId: a.id,
          toolName: a.toolName,
          args: a.args,
          path: `/sessions/${encodeURIComponent(a.sessionId)}#approval-${encodeURIComponent(a.id)}`,
        }, `approval.requested:${a.sessionId}:${a.id}`);
      }
      const now = new Set(pending.map((a) => a.id));
      for (const id of this.#approvals) if (!now.has(id)) this.#approvals.delete(id);
    } else if (frame.type === "spawn_status") {
      for (const job of frame.jobs as SpawnJob[]) {
        if (job.state !== "failed" || this.#failedJobs.has(job.id)) continue;
        this.#failedJobs.add(job.id);
        this.#emit("spawn.failed", job.sessionId, {
          jobId: job.id,
          repo: job.repo,
          branch: job.branch,
          error: job.error,
        });
      }
    }
  }

  #update(s: SessionSummary, announce: boolean): void {
    const prev = this.#sessions.get(s.id);
    const seen: Seen = prev ?? {
      name: s.name,
      repo: s.repo ?? null,
      branch: null,
      state: s.state,
      online: s.online,
      lastEventAt: s.lastEventAt,
      stalledAt: null,
      said: false,
      held: false,
      failure: null,
      follower: null,
      container: s.container ?? null,
    };
    seen.name = s.name;
    seen.repo = s.repo ?? null;
    seen.branch = (s as { branch?: string | null }).branch ?? null;
    if (s.lastEventAt !== seen.lastEventAt) seen.stalledAt = null;
    seen.lastEventAt = s.lastEventAt;
    this.#sessions.set(s.id, seen);
    if (s.online && !seen.follower) this.#follow(s.id, seen);
    // Its socket drops here: only the replica it was on says so (when that one was killed, nobody does: the
    // plugin reconnects to another within its backoff).
    if (announce && prev) {
      if (prev.online && !s.online && !seen.said && seen.held) this.#emit("session.lost", s.id, {});
    }
    if (s.online) seen.held = this.#holds(s.id);
    if (announce && s.container === "crashed" && (!prev || prev.container !== "crashed")) {
      this.#emit("session.crashed", s.id, {
        exitCode: s.exitCode,
        reason: s.reason,
        path: `/sessions/${encodeURIComponent(s.id)}`,
      });
    }
    seen.container = s.container ?? null;
    if (s.online && !seen.online) seen.said = false;
    seen.state = s.state;
    seen.online = s.online;
    if (!s.online && seen.follower) {
      this.hub.leave(seen.follower);
      seen.follower = null;
    }
  }

  #follow(id: string, seen: Seen): void {
    const follower: Subscriber = {
      send() {}, // never called: the hub hands this follower the events themselves
      bufferedAmount: () => 0,
      close() {},
      events: (_sessionId, _after, events) => {
        for (const p of events) {
          // Streaming deltas and tool output are most of the traffic: skip what cannot hold what is looked for
          // without parsing it (events published as text only; live ones come as objects).
          if (!p.event && !INTERESTING.test(p.json)) continue;
          // The hub carries only events that passed `AgentEvent`: its loose stored shape is narrowed here.
          this.#seen(id, seen, eventObject(p) as unknown as AgentEvent);
        }
      },
    };
    this.hub.join(follower, { broadcasts: false });
    this.hub.subscribe(follower, id);
    seen.follower = follower;
  }

  /** Every event type is named here, so a new one fails the type check until this decides what it means. */
  #seen(id: string, seen: Seen, e: AgentEvent): void {
    switch (e.type) {
      case "bye":
        seen.said = true;
        return;
      case "agent_start":
        seen.failure = null;
        return;
      case "agent_end": {
        // From the event, not the row: a short run can start and end within one coalesced row update. A click
        // opens the conversation at the run's end.
        const at = { seq: e.seq, path: `/sessions/${encodeURIComponent(id)}?at=${e.seq}` };
        if (!this.#holds(id)) {
          seen.failure = null;
          return;
        }
        if (seen.failure) this.#emit("run.failed", id, { reason: seen.failure, ...at });
        else this.#emit("run.settled", id, at);
        seen.failure = null;
        return;
      }
      case "message_end": {
        const m: { role?: unknown; stopReason?: unknown; errorMessage?: unknown } = e.message ?? {};
        if (m.role !== "assistant") return;
        if (m.stopReason === "error" || m.stopReason === "aborted") {
          seen.failure = typeof m.errorMessage === "string" ? m.errorMessage : `run ${m.stopReason}`;
        }
        return;
      }
      case "message_start":
      case "message_update":
      case "tool_execution_start":
      case "tool_execution_update":
      case "tool_execution_end":
      case "agent_settled":
      case "session_info":
      case "buffer_overflow":
      case "approval_request":
      case "approval_resolved":
      case "command_result":
      case "session_notice":
        // Nothing to announce: approvals come from the hub's `approvals` frames, stalls from the rows.
        return;
      default:
        e satisfies never;
    }
  }

  #forget(id: string): void {
    const s = this.#sessions.get(id);
    if (s?.follower) this.hub.leave(s.follower);
    this.#sessions.delete(id);
  }
}

/** A hub subscriber that hands each frame to `onFrame` at once (it never buffers). */
function recorder(onFrame: (data: string) => void): Subscriber {
  return {
    send(data) {
      try {
        onFrame(data);
      } catch (error) {
        console.error(`lvmh: notification watcher: ${(error as Error).message}`);
      }
    },
    bufferedAmount: () => 0,
    close() {},
  };
}
