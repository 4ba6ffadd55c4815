/** "Notify when done" for one session: remembered per browser, asks for notification permission on first use. */
import { useEffect, useState } from "preact/hooks";
import { askPermission, setWatched, watchedSessions } from "./watch.ts";

/**
 * Whether this browser notifies when the session settles, and a toggle.
 * @returns `[watched, toggle]`; the toggle explains when the browser blocks notifications
 */
export function useWatch(id: string): [boolean, () => Promise<void>] {
  const [watched, setState] = useState(false);
  useEffect(() => setState(watchedSessions().has(id)), [id]);
  async function toggle() {
    const on = !watched;
    if (on && !await askPermission()) {
      alert("Notifications are blocked for this site in the browser's settings.");
      return;
    }
    setState(setWatched(id, on));
  }
  return [watched, toggle];
}
