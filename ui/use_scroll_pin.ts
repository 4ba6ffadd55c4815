/**
 * Keeps a growing page where the reader wants it: at the bottom while following, at the same message after
 * older ones were added above, and otherwise offers a jump to what arrived unseen.
 */
import type { RefObject } from "preact";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";

/** How close to the bottom (px) still counts as following. */
const FOLLOW_SLACK = 120;

export interface ScrollPin {
  /** New content arrived while the reader was scrolled up. */
  unseen: boolean;
  jumpToLatest(): void;
  /** Call just before content is added above, so the view stays on the same message. */
  keepPlace(): void;
}

/**
 * Pin the document's scroll position across changes of `content`.
 * @param content anything that changes when the page's content does
 */
export function useScrollPin(content: unknown): ScrollPin {
  const anchor = useRef<{ height: number; y: number } | null>(null);
  const stick = useRef(true);
  const [unseen, setUnseen] = useState(false);

  useEffect(() => {
    const onScroll = () => {
      const el = document.scrollingElement ?? document.documentElement;
      stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < FOLLOW_SLACK;
      if (stick.current) setUnseen(false);
    };
    addEventListener("scroll", onScroll, { passive: true });
    // Start at the newest message.
    scrollTo(0, document.documentElement.scrollHeight);
    // Following, stay at the bottom when what is shown grows by itself after it was scrolled down (an image
    // that loads, a block of messages laid out late). Runs after layout and before paint, so it reads no stale
    // height and forces no layout.
    const grown = new ResizeObserver(() => {
      if (stick.current) scrollTo(0, document.documentElement.scrollHeight);
    });
    grown.observe(document.body);
    return () => {
      removeEventListener("scroll", onScroll);
      grown.disconnect();
    };
  }, []);

  useLayoutEffect(() => {
    const el = document.documentElement;
    if (anchor.current) {
      scrollTo(0, anchor.current.y + el.scrollHeight - anchor.current.height);
      anchor.current = null;
    } else if (stick.current) {
      scrollTo(0, el.scrollHeight);
    } else {
      setUnseen(true);
    }
  }, [content]);

  return {
    unseen,
    jumpToLatest() {
      scrollTo({ top: document.documentElement.scrollHeight, behavior: "smooth" });
      setUnseen(false);
    },
    keepPlace() {
      anchor.current = { height: document.documentElement.scrollHeight, y: scrollY };
    },
  };
}

/**
 * Run `load` whenever the element scrolls into view (e.g. the top of a history, to fetch older pages).
 * @param enabled observe only while there is something to load
 */
export function useWhenVisible(ref: RefObject<Element>, enabled: boolean, load: () => void, deps: unknown[]) {
  useEffect(() => {
    if (!enabled || !ref.current) return;
    const io = new IntersectionObserver((entries) => entries.some((e) => e.isIntersecting) && load());
    io.observe(ref.current);
    return () => io.disconnect();
  }, [enabled, ...deps]);
}
