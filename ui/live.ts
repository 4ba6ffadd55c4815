/**
 * The page's one `/ws` connection, shared by every island on it (top bar, session list, session view, spawn
 * panel): it keeps the session directory, the pending approvals and the spawn jobs as topics, re-subscribes the
 * sessions being followed on every (re)connect with `after` = the last seq each holds, and notices when the
 * daemon stopped accepting this browser's token. Islands reach it through `pageLive()`, in effects only (the
 * server render never opens a socket).
 */
import type { Approval, ServerFrame, SpawnJob } from "../lib/protocol.ts";
import { applyPresence, type PresenceMap } from "./presence.ts";
import { credentialsAccepted as restCredentialsAccepted, onSignInRequired, socketUrl } from "./api.ts";
import { connectLive, type LiveSocket, type SocketStatus } from "./live_socket.ts";
import { applySessionFrame, EMPTY_DIRECTORY, type SessionDirectory } from "./session_directory.ts";
import { createTopic, type Topic } from "./topic.ts";

/** An `events` frame for one followed session. */
export type EventsFrame = Extract<ServerFrame, { type: "events" }>;

/** A session's events followed live. */
export interface Follower {
  /** The last persisted seq the follower holds: the catch-up point of each (re)subscribe. */
  after(): number;
  onEvents(frame: EventsFrame): void;
}

/** The shared connection and what it knows. */
export interface PageLive {
  status: Topic<SocketStatus | null>;
  sessions: Topic<SessionDirectory>;
  /** Pending approvals of every session, oldest first; null until the daemon sent the first list. */
  approvals: Topic<Approval[] | null>;
  /** Spawn jobs; null until the first `spawn_status`. */
  spawnJobs: Topic<SpawnJob[] | null>;
  /** True once the daemon refused this browser's credentials: the page asks for the token again. */
  needSignIn: Topic<boolean>;
  /** Who watches or steers each session (from `presence` frames). */
  presence: Topic<PresenceMap>;
  /**
   * Say this page shows a session (and whether its composer is being typed in), now and after every
   * reconnect; call again as typing changes.
   * @returns a function that says the page left
   */
  watch(sessionId: string, typing: boolean): () => void;
  /**
   * Follow a session's events now and after every reconnect.
   * @returns a function that stops following
   */
  follow(sessionId: string, follower: Follower): () => void;
  /** Ask for the whole session list again (answered by `session_list`). */
  requestList(): void;
  /** Show the sign-in prompt (`pageLive()` has every REST call's 401 do this). */
  requireSignIn(): void;
  /** Skip the backoff and reconnect now. */
  reconnectNow(): void;
  close(): void;
}

export interface PageLiveOptions {
  url?: string | (() => string);
  WebSocketImpl?: typeof WebSocket;
  /** Whether the REST API still takes this browser's credentials (a refused socket does not say why). */
  credentialsAccepted?: () => Promise<boolean>;
  minDelayMs?: number;
}

/**
 * Open a live connection (use `pageLive()` in islands; this is for tests and the singleton).
 * @returns the connection's topics and controls; never throws
 */
export function createPageLive(opts: PageLiveOptions = {}): PageLive {
  const status = createTopic<SocketStatus | null>(null);
  const sessions = createTopic<SessionDirectory>(EMPTY_DIRECTORY);
  const approvals = createTopic<Approval[] | null>(null);
  const spawnJobs = createTopic<SpawnJob[] | null>(null);
  const needSignIn = createTopic(false);
  const presence = createTopic<PresenceMap>(new Map());
  const watching = new Map<string, boolean>();
  const followers = new Map<string, Follower>();
  const accepted = opts.credentialsAccepted ?? (() => restCredentialsAccepted());

  function onFrame(frame: ServerFrame): void {
    switch (frame.type) {
      case "session_list":
        sessions.set(applySessionFrame(sessions.get(), frame));
        return;
      case "session_update":
        // A delta without the list it patches (a frame lost on the way): ask for the whole list again.
        if (!sessions.get().loaded) socket.send({ type: "list" });
        sessions.set(applySessionFrame(sessions.get(), frame));
        return;
      case "events":
        followers.get(frame.sessionId)?.onEvents(frame);
        return;
      case "approvals":
        approvals.set(frame.pending);
        return;
      case "spawn_status":
        spawnJobs.set(frame.jobs);
        return;
      case "presence":
        presence.set(applyPresence(presence.get(), frame));
        return;
      default:
        // `pong`, `error` and frames of newer daemons need nothing from the page.
        return;
    }
  }

  const socket: LiveSocket = connectLive({
    url: opts.url ?? socketUrl,
    WebSocketImpl: opts.WebSocketImpl,
    minDelayMs: opts.minDelayMs,
    onOpen(send) {
      // The daemon's presence is per socket: a new one starts empty, and is told again what this page shows.
      presence.set(new Map());
      for (const [sessionId, typing] of watching) send({ type: "watch", sessionId, typing });
      for (const [sessionId, f] of followers) send({ type: "subscribe", sessionId, after: f.after() });
    },
    onStatus(s) {
      status.set(s);
      // Refused twice in a row: maybe the daemon's token changed. Only the REST API can tell a 401 apart.
      if (s.state === "retrying" && s.attempt >= 2) void accepted().then((ok) => ok || needSignIn.set(true));
    },
    onFrame,
  });

  const online = () => socket.reconnectNow();
  globalThis.addEventListener?.("online", online);

  return {
    status,
    sessions,
    approvals,
    spawnJobs,
    needSignIn,
    follow(sessionId, follower) {
      followers.set(sessionId, follower);
      socket.send({ type: "subscribe", sessionId, after: follower.after() });
      return () => {
        if (followers.get(sessionId) !== follower) return;
        followers.delete(sessionId);
        socket.send({ type: "unsubscribe", sessionId });
      };
    },
    presence,
    watch(sessionId, typing) {
      watching.set(sessionId, typing);
      socket.send({ type: "watch", sessionId, typing });
      return () => {
        watching.delete(sessionId);
        socket.send({ type: "watch", sessionId, typing: false, leave: true });
      };
    },
    requestList: () => void socket.send({ type: "list" }),
    requireSignIn: () => needSignIn.set(true),
    reconnectNow: () => socket.reconnectNow(),
    close() {
      globalThis.removeEventListener?.("online", online);
      socket.close();
    },
  };
}

let shared: PageLive | null = null;

/** The page's connection, opened on first use; from then on any REST call's 401 shows the sign-in prompt. */
export function pageLive(): PageLive {
  if (shared) return shared;
  const live = shared = createPageLive();
  onSignInRequired(() => live.requireSignIn());
  return live;
}
