/**
 * The session page's conversation: the server-rendered latest page of events, then live `events` frames
 * through the page's connection (which re-subscribes with `after` = the last seq held after every reconnect),
 * a refetch when a frame starts past what is held, and older pages on demand.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import {
  applyEvents,
  buildConversation,
  type Conversation,
  HISTORY_PAGE,
  mergeEvents,
  prependEvents,
} from "./conversation.ts";
import { pageLive } from "./live.ts";
import { notifySettled } from "./watch.ts";
import { sessionEvents } from "./rest.ts";
import { asUiEvents, type UiEvent } from "./types.ts";

export interface ConversationState {
  conv: Conversation;
  hasOlder: boolean;
  loadingOlder: boolean;
  /** Fetch the page before the oldest event held; `beforePrepend` runs just before it is added. */
  loadOlder(beforePrepend?: () => void): Promise<void>;
}

/**
 * Hold and follow one session's conversation.
 * @param id the session
 * @param initial the server-rendered events
 * @param initialHasOlder whether older events exist than `initial`
 * @param title what a "done" notification calls the session
 */
export function useConversation(
  id: string,
  initial: UiEvent[],
  initialHasOlder: boolean,
  title: string,
): ConversationState {
  const [conv, setConv] = useState(() => buildConversation(initial));
  const [hasOlder, setHasOlder] = useState(initialHasOlder);
  const [loadingOlder, setLoadingOlder] = useState(false);
  const convRef = useRef(conv);
  convRef.current = conv;
  const titleRef = useRef(title);
  titleRef.current = title;

  async function fillGap(after: number) {
    try {
      const missing = await sessionEvents(id, { after });
      setConv((c) => mergeEvents(c, missing));
    } catch {
      // A 401 raised the sign-in prompt (ui/api.ts); otherwise the next frame past what is held tries again.
    }
  }

  useEffect(() => {
    return pageLive().follow(id, {
      after: () => convRef.current.lastSeq,
      onEvents(frame) {
        const events = asUiEvents(frame.events);
        // The frame continues from `after`: if that is past what we hold, fetch the gap (merged in order).
        const persisted = events.some((e) => e.type !== "message_update");
        if (persisted && frame.after > convRef.current.lastSeq) void fillGap(convRef.current.lastSeq);
        if (events.some((e) => e.type === "agent_settled" && e.seq > convRef.current.lastSeq)) {
          notifySettled(id, titleRef.current);
        }
        setConv((c) => applyEvents(c, events));
      },
    });
  }, [id]);

  async function loadOlder(beforePrepend?: () => void) {
    if (loadingOlder || !hasOlder) return;
    setLoadingOlder(true);
    try {
      const before = convRef.current.firstSeq || convRef.current.lastSeq + 1;
      const older = await sessionEvents(id, { before, limit: HISTORY_PAGE });
      // The page goes in at once, anchored once. Added a slice per frame, the reader's message was sometimes
      // left a page's height away under load (the anchor taken before a slice whose render came late).
      beforePrepend?.();
      setConv((c) => prependEvents(c, older));
      if (older.length < HISTORY_PAGE) setHasOlder(false);
    } catch {
      // A 401 raised the sign-in prompt (ui/api.ts); otherwise scrolling up again retries.
    } finally {
      setLoadingOlder(false);
    }
  }

  return { conv, hasOlder, loadingOlder, loadOlder };
}
