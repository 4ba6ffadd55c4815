/** The session page's row of the live session directory: its online/running state and whether it was deleted. */
import { useEffect, useState } from "preact/hooks";
import type { SessionSummary } from "../lib/protocol.ts";
import { pageLive } from "./live.ts";

export interface SessionSummaryState {
  session: SessionSummary;
  /** The session left the daemon's list: deleted here or in another tab. */
  deleted: boolean;
  /** Correct the row from what a REST answer proved (e.g. a 409 "offline") until the daemon says more. */
  patch(fields: Partial<SessionSummary>): void;
}

/**
 * Follow one session's summary through the page's connection.
 * @param initial the row the server rendered
 */
export function useSessionSummary(initial: SessionSummary): SessionSummaryState {
  const id = initial.id;
  const [session, setSession] = useState(initial);
  const [deleted, setDeleted] = useState(false);
  useEffect(() => {
    const topic = pageLive().sessions;
    const update = () => {
      const dir = topic.get();
      const mine = dir.byId.get(id);
      // The list's rows leave out the models (lib/sessions.ts): keep the ones this page was rendered with.
      if (mine && (dir.changed === null || dir.changed.includes(id))) {
        setSession((s) => mine.models ? mine : { ...mine, models: s.models });
      }
      // Before the first full list, absence means nothing.
      setDeleted(dir.loaded && !mine);
    };
    update();
    return topic.subscribe(update);
  }, [id]);
  return { session, deleted, patch: (fields) => setSession((s) => ({ ...s, ...fields })) };
}
