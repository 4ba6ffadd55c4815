/**
 * Fault harness helper: a browser-side `/ws` client that follows one session across daemon restarts. It
 * redials when its socket closes and resubscribes with `after` = the last seq it saw, as the web UI does, and
 * counts every persisted seq it receives, so a duplicate or a hole at a restart seam shows.
 */
export interface FollowingBrowser {
  /** How many times each persisted seq arrived. */
  seen: Map<number, number>;
  /** Sockets opened so far (1 + reconnects). */
  connects(): number;
  close(): void;
}

/** Follow `sessionId` on `url` (a `/ws?token=` URL) until `close()`. */
export function followSession(url: string, sessionId: string): FollowingBrowser {
  const seen = new Map<number, number>();
  let last = 0;
  let connects = 0;
  let stopped = false;
  let socket: WebSocket | null = null;
  const dial = () => {
    if (stopped) return;
    const s = new WebSocket(url);
    socket = s;
    s.onopen = () => {
      connects++;
      s.send(JSON.stringify({ type: "subscribe", sessionId, after: last }));
    };
    s.onmessage = (e) => {
      const frame = JSON.parse(e.data);
      if (frame.type !== "events" || frame.sessionId !== sessionId) return;
      for (const ev of frame.events) {
        if (ev.type === "message_update") continue; // live deltas carry no stored seq
        seen.set(ev.seq, (seen.get(ev.seq) ?? 0) + 1);
        last = Math.max(last, ev.seq);
      }
    };
    s.onerror = () => {};
    s.onclose = () => {
      if (!stopped) setTimeout(dial, 50); // the daemon is restarting: try again shortly
    };
  };
  dial();
  return {
    seen,
    connects: () => connects,
    close() {
      stopped = true;
      socket?.close();
    },
  };
}
