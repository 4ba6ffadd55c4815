/**
 * `/sessions/:id?at=SEQ`: the conversation opens at that event, highlighted. The event's own element, or the
 * last one before it (a tool call shows inside its assistant message), is scrolled to the middle and marked;
 * history that arrives afterwards (the live catch-up, images laid out late) is followed until the reader
 * scrolls, clicks or types, so the moment stays on screen instead of the newest message.
 */
import { useEffect, useRef } from "preact/hooks";

/** The element of the conversation that shows `seq`: the one with that seq, else the last one before it. */
export function momentElement(root: ParentNode, seq: number): HTMLElement | null {
  let best: HTMLElement | null = null;
  for (const el of root.querySelectorAll<HTMLElement>("[data-seq]")) {
    const s = Number(el.dataset.seq);
    if (s <= seq && (!best || s >= Number(best.dataset.seq))) best = el;
  }
  return best;
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
    // After the scroll pin's own placement (it starts at the newest message) and this frame's layout.
    const frame = requestAnimationFrame(() => el.scrollIntoView({ block: "center" }));
    return () => cancelAnimationFrame(frame);
  }, [at, content]);
}
