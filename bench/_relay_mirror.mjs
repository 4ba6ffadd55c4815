// What bench/_relay.mjs adds with `--mirror`: the rest of the traffic lvmh's peers get for the same load, and
// none of its storing, so bench/latency.ts (`MIRROR=1`) can tell what that traffic costs from what the rest of
// lvmh's work does. Browsers get every event in `events` frames (a run's other events batched on the loop's
// next turn, as a commit would; each frame says the last seq sent before it, `after`), and every 100 ms a
// `session_update` with the rows that changed, shaped as lvmh's (lib/session_rows.ts); plugins get an `ack`
// at most every 50 ms (lib/agent_conn.ts). Nothing is checked, numbered or kept beyond those rows.

const SESSION_UPDATE_INTERVAL_MS = 100;
const ACK_INTERVAL_MS = 50;

/** At most one call of `fn` per `ms`, the last one always made (lib/throttle.ts). */
function throttle(fn, ms) {
  let last = -Infinity, timer;
  const run = () => {
    timer = undefined;
    const wait = last + ms - performance.now();
    if (wait > 0) return void (timer = setTimeout(run, wait));
    last = performance.now();
    fn();
  };
  return () => timer === undefined && run();
}

/**
 * @param {Map<string, Set<import("ws").WebSocket>>} followers sessionId → the browsers following it
 * @param {Set<import("ws").WebSocket>} browsers every browser socket
 */
export function mirror(followers, browsers) {
  /** sessionId → its row as lists carry it. */
  const rows = new Map();
  const changed = new Set();
  /** sessionId → the events waiting for the loop's next turn, and the last seq sent to its followers. */
  const queued = new Map(), sent = new Map();
  let flushing = false;

  const publishRows = throttle(() => {
    if (!changed.size) return;
    const out = JSON.stringify({
      type: "session_update",
      sessions: [...changed].map((id) => rows.get(id)),
      removed: [],
    });
    changed.clear();
    for (const b of browsers) b.send(out);
  }, SESSION_UPDATE_INTERVAL_MS);

  const flush = () => {
    flushing = false;
    for (const [sessionId, events] of queued) {
      const out = JSON.stringify({ type: "events", sessionId, after: sent.get(sessionId) ?? 0, events });
      sent.set(sessionId, events.at(-1).seq);
      for (const b of followers.get(sessionId) ?? []) b.send(out);
    }
    queued.clear();
  };

  /** A row's change from an event: its state, its last line, when. */
  const touch = (frame) => {
    const row = rows.get(frame.sessionId);
    if (!row) return;
    if (frame.type === "agent_start") row.state = "running";
    if (frame.type === "agent_end") row.state = "idle";
    row.lastSeq = Math.max(row.lastSeq, frame.seq);
    row.lastEventAt = row.lastActivityAt = frame.ts;
    row.activity = {
      state: row.state,
      line: frame.type === "message_start"
        ? ""
        : frame.message?.text ?? row.activity.line + (frame.delta ?? ""),
    };
    changed.add(frame.sessionId);
    publishRows();
  };

  return {
    /** A plugin's hello: its session's row, and the throttled ack of its socket. */
    hello(frame, ws) {
      // The hello's session fields (id, name, cwd, model, provider, agent, repo, startedAt), then lvmh's own.
      rows.set(frame.sessionId, {
        ...frame.session,
        id: frame.sessionId,
        state: "idle",
        lastSeq: 0,
        lastEventAt: null,
        online: true,
        ask: [],
        waiting: 0,
        title: frame.session?.name ?? frame.sessionId,
        activity: { state: "idle", line: "" },
        cost: 0,
        lastActivityAt: null,
        container: null,
      });
      changed.add(frame.sessionId);
      publishRows();
      let acked = 0;
      const ack = throttle(
        () =>
          ws.send(
            JSON.stringify({
              v: 1,
              type: "ack",
              sessionId: frame.sessionId,
              seq: 0,
              ts: Date.now(),
              lastSeq: acked,
            }),
          ),
        ACK_INTERVAL_MS,
      );
      return (seq) => {
        acked = seq;
        ack();
      };
    },
    /** The `after` of a delta sent ahead of what is queued. */
    after: (sessionId) => sent.get(sessionId) ?? 0,
    /** Any event but a delta: queued for the loop's next turn. */
    event(frame) {
      if (!queued.has(frame.sessionId)) queued.set(frame.sessionId, []);
      queued.get(frame.sessionId).push(frame);
      if (!flushing) {
        flushing = true;
        setImmediate(flush);
      }
      touch(frame);
    },
    touch,
  };
}
