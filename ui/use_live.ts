/** Preact hooks over the page's live connection, for islands. */
import { useEffect, useState } from "preact/hooks";
import { type PageLive, pageLive } from "./live.ts";
import type { Topic } from "./topic.ts";

/**
 * The current value of one of the connection's topics, re-rendering on change. Renders `initial` on the
 * server and in the first client render (so hydration matches), then whatever the topic holds.
 * @param pick which topic
 * @param initial the value before the connection is reached
 */
export function useLive<T>(pick: (live: PageLive) => Topic<T>, initial: T): T {
  const [value, setValue] = useState(initial);
  useEffect(() => {
    const topic = pick(pageLive());
    setValue(() => topic.get());
    return topic.subscribe((v) => setValue(() => v));
  }, []);
  return value;
}
