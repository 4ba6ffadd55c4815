/**
 * The sessions list's glances, kept live: the server's glances of the first rows, then the events of the
 * online sessions shown (running and waiting ones first) followed over the page's connection. The daemon
 * follows at most 16 sessions per browser, so the list follows `FOLLOW_MAX`; the others keep what the server
 * rendered and their summary row (state, waiting, last activity), which `session_update` frames keep live.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import type { SessionSummary } from "../protocol.ts";
import { applyGlance, EMPTY_GLANCE, type Glance } from "./glance.ts";
import { pageLive } from "./live.ts";
import { asUiEvents } from "./wire.ts";

/** Sessions followed at once (the daemon allows 16; the rest is left for other islands). */
export const FOLLOW_MAX = 12;

/**
 * Glances by session id, following the online ones among `shown`.
 * @param initial the server-rendered glances
 * @param shown the rows on screen, in order
 */
export function useGlances(
  initial: Record<string, Glance>,
  shown: readonly SessionSummary[],
): Record<string, Glance> {
  const [glances, setGlances] = useState(initial);
  const ref = useRef(glances);
  ref.current = glances;
  const followed = useRef(new Map<string, () => void>());

  // Which to follow: online rows on screen, those that need a person or run first.
  const want = shown.filter((s) => s.online).sort((a, b) => rank(a) - rank(b)).slice(0, FOLLOW_MAX)
    .map((s) => s.id);
  const key = want.join("\n");

  useEffect(() => {
    const live = pageLive();
    const keep = new Set(want);
    for (const [id, stop] of followed.current) {
      if (!keep.has(id)) (stop(), followed.current.delete(id));
    }
    for (const id of want) {
      if (followed.current.has(id)) continue;
      const start = shown.find((s) => s.id === id)?.lastSeq ?? 0;
      // From the server's glance when it has one; else only what comes from now on (older events are not
      // read here: a list of thousands must not fetch each history).
      if (!ref.current[id]) setGlances((g) => ({ ...g, [id]: { ...EMPTY_GLANCE, seq: start } }));
      followed.current.set(
        id,
        live.follow(id, {
          after: () => ref.current[id]?.seq || start,
          onEvents(frame) {
            const events = asUiEvents(frame.events);
            setGlances((g) => ({
              ...g,
              [id]: applyGlance(g[id] ?? { ...EMPTY_GLANCE, seq: start }, events),
            }));
          },
        }),
      );
    }
  }, [key]);

  useEffect(() => () => {
    for (const stop of followed.current.values()) stop();
    followed.current.clear();
  }, []);

  return glances;
}

function rank(s: SessionSummary): number {
  return s.waiting > 0 ? 0 : s.state === "running" ? 1 : 2;
}
