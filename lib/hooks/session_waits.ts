/**
 * The two waits of a hook prompt kept for a session, each an in-process follower of the hub: until the session
 * is online, and until its plugin answers the prompt with a `command_result` (or a new socket of the session
 * means it must go again). Both end at once on shutdown. And the look back for an answer stored before (by a
 * daemon killed before it could drop the prompt).
 */
import type { ServerFrame, SessionSummary } from "../protocol.ts";
import type { Store } from "../store.ts";
import { eventObject, type Hub, type Subscriber } from "../hub.ts";

/** How a sent prompt's wait ended: the plugin's answer, a new socket (send again), or shutdown. */
export type Answer = { ok: boolean; error?: string } | "again" | "stopped";

/**
 * Resolve once the session is online (and, with `rowReady`, once its row in a `session_update` says more, e.g.
 * that no run is active).
 * @throws {Error} after `timeoutMs`, or when `signal` aborts first.
 */
export function whenOnline(
  hub: Hub,
  online: () => boolean,
  sessionId: string,
  timeoutMs: number,
  signal: AbortSignal,
  rowReady: (row: SessionSummary) => boolean = (row) => row.online,
): Promise<void> {
  const stoppedError = () => new Error(`the daemon stopped before session "${sessionId}" came online`);
  if (online()) return Promise.resolve();
  if (signal.aborted) return Promise.reject(stoppedError());
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      hub.leave(sub);
      signal.removeEventListener("abort", stopped);
    };
    const stopped = () => {
      done();
      reject(stoppedError());
    };
    signal.addEventListener("abort", stopped);
    const sub: Subscriber = {
      send(data) {
        if (!data.startsWith('{"type":"session_update"')) return;
        const frame = JSON.parse(data) as Extract<ServerFrame, { type: "session_update" }>;
        if (frame.sessions.some((s) => s.id === sessionId && rowReady(s))) {
          done();
          resolve();
        }
      },
      bufferedAmount: () => 0,
      close() {},
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`session "${sessionId}" did not come online within ${timeoutMs / 1000} s`));
    }, timeoutMs);
    hub.join(sub);
  });
}

/**
 * Wait for the session's `command_result` for `commandId` (followed from before the frame is sent, as stored
 * events), a new hello of the session, or shutdown. No deadline: a follow-up is taken only once pi's run
 * ends, however long that is.
 * @param onHello registers a call for the session's next hello; returns its removal
 */
export function commandAnswer(
  hub: Hub,
  sessionId: string,
  commandId: string,
  signal: AbortSignal,
  onHello: (again: () => void) => () => void,
): { promise: Promise<Answer>; cancel(): void } {
  let settle!: (a: Answer) => void;
  const promise = new Promise<Answer>((resolve) => settle = resolve);
  const stopped = () => done("stopped");
  const done = (a: Answer) => {
    hub.leave(sub);
    forgetHello();
    signal.removeEventListener("abort", stopped);
    settle(a);
  };
  const sub: Subscriber = {
    send() {}, // never called: the hub hands an in-process follower the events themselves
    bufferedAmount: () => 0,
    close() {},
    events(_sessionId, _after, events) {
      for (const e of events) {
        // Only a command_result is parsed (the others go by unread).
        if (!e.json.includes('"command_result"')) continue;
        const ev = eventObject(e) as { type: string; commandId?: unknown; ok?: unknown; error?: unknown };
        if (ev.type !== "command_result" || ev.commandId !== commandId) continue;
        return done({ ok: ev.ok === true, error: typeof ev.error === "string" ? ev.error : undefined });
      }
    },
  };
  hub.join(sub, { broadcasts: false });
  hub.subscribe(sub, sessionId);
  const forgetHello = onHello(() => done("again"));
  signal.addEventListener("abort", stopped);
  if (signal.aborted) stopped();
  return { promise, cancel: stopped };
}

/** Rows read per page when looking back for a stored answer. */
const LOOK_BACK_PAGE = 500;

/**
 * True when the session's event log holds an `ok` `command_result` for `commandId` above seq `after`: the
 * plugin took the prompt (a refusal does not count: it may be sent again).
 */
export function answeredInLog(
  store: Pick<Store, "eventRows">,
  sessionId: string,
  commandId: string,
  after: number,
): boolean {
  for (let seq = after;;) {
    const rows = store.eventRows(sessionId, { after: seq, limit: LOOK_BACK_PAGE });
    for (const r of rows) {
      // Only a command_result naming this command is parsed.
      if (r.type !== "command_result" || !r.payload.includes(commandId)) continue;
      const ev = JSON.parse(r.payload) as { commandId?: unknown; ok?: unknown };
      if (ev.commandId === commandId && ev.ok === true) return true;
    }
    if (rows.length < LOOK_BACK_PAGE) return false;
    seq = rows[rows.length - 1].seq;
  }
}

/** Resolve after `ms`, or at once when `signal` aborts. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done);
  });
}
