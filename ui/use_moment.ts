/**
 * `/sessions/:id?at=SEQ`: the conversation opens at that event, highlighted. The event's own element, or the
 * last one before it (a tool call shows inside its assistant message), is scrolled to the middle and marked;
 * history that arrives afterwards (the live catch-up, images laid out late) is followed until the reader
 * scrolls, clicks or types, so the moment stays on screen instead of the newest message.
 */
import { useEffect, useRef } from "preact/hooks";

/** How long after the conversation changed the moment is kept on screen against other scrolls. */
const SETTLE_MS = 3000;

/**
 * The element of the conversation that shows `seq`: the one with that seq, else the last one before it (a
 * tool call inside its message), else the first one after it (a run's start, before its prompt).
 */
export function momentElement(root: ParentNode, seq: number): HTMLElement | null {
  let before: HTMLElement | null = null;
  let after: HTMLElement | null = null;
  for (const el of root.querySelectorAll<HTMLElement>("[data-seq]")) {
    const s = Number(el.dataset.seq);
    if (s <= seq && (!before || s >= Number(before.dataset.seq))) before = el;
    if (s > seq && (!after || s < Number(after.dataset.seq))) after = el;
  }
  return before ?? after;
}

/**
 * Keep the moment `at` on screen (no-op when null).
 * @param content what the conversation shows: a change re-places the moment until the reader takes over.
 */
export function useMoment(at: number | null, content: unknown): void {
  const released = useRef(false);
  useEffect(() => {
    if (at === null) return;
    const release = () => (released.current = true);
    const kinds = ["wheel", "touchstart", "keydown", "mousedown"] as const;
    for (const k of kinds) addEventListener(k, release, { passive: true, once: true });
    return () => {
      for (const k of kinds) removeEventListener(k, release);
    };
  }, [at]);
  useEffect(() => {
    if (at === null || released.current) return;
    const el = momentElement(document, at);
    if (!el) return;
    for (const old of document.querySelectorAll(".at-moment")) {
      if (old !== el) old.classList.remove("at-moment");
    }
    el.classList.add("at-moment");
    el.dataset.moment = String(at);
    const place = () => el.scrollIntoView({ block: "center" });
    // After the scroll pin's own placement (it starts at the newest message) and this frame's layout.
    const frame = requestAnimationFrame(place);
    // The pin may still follow the bottom in the same frame (history laid out late): for a moment after each
    // change, a scroll that takes the moment off screen, and was not the reader's, puts it back.
    const until = performance.now() + SETTLE_MS;
    const onScroll = () => {
      if (released.current || performance.now() > until) return;
      const r = el.getBoundingClientRect();
      if (r.bottom < 0 || r.top > innerHeight) place();
    };
    addEventListener("scroll", onScroll, { passive: true });
    return () => {
      cancelAnimationFrame(frame);
      removeEventListener("scroll", onScroll);
    };
  }, [at, content]);
}
