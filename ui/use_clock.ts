/** A clock for relative times ("3 min ago"): the server's `now` in the first render, then the browser's. */
import { useEffect, useState } from "preact/hooks";

/** How often relative times are refreshed. */
const TICK_MS = 30_000;

/**
 * The current time, refreshed every 30 s.
 * @param initial the server's clock at render time (so hydration matches the server's HTML)
 */
export function useClock(initial: number): number {
  const [now, setNow] = useState(initial);
  useEffect(() => {
    setNow(Date.now());
    const tick = setInterval(() => setNow(Date.now()), TICK_MS);
    return () => clearInterval(tick);
  }, []);
  return now;
}
