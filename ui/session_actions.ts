/**
 * What a person can do to a session from its page: prompt (with images or not), abort, set the ask set,
 * delete; errors become messages (a 401 has already raised the sign-in prompt, through ui/api.ts).
 */
import type { AskSet, DeliverAs, SessionSummary } from "../lib/protocol.ts";
import { ApiError, errorText } from "./api.ts";
import { abortSession, deleteSession, sendPrompt, setPolicy } from "./rest.ts";
import type { ComposerImage } from "./steer.ts";

export interface SessionActions {
  /** Resolves to an error message, or null once the daemon took it. */
  send(message: string, deliverAs: DeliverAs, images?: ComposerImage[]): Promise<string | null>;
  abort(): Promise<string | null>;
  /** Replace the session's ask set (which tool calls wait for a person). */
  setAsk(ask: AskSet): Promise<string | null>;
  /** Asks for confirmation, deletes, then leaves for the list. */
  remove(title: string): Promise<void>;
}

/**
 * Actions on one session.
 * @param patch corrects the page's row from what an answer proved (409: not online / still online)
 */
export function sessionActions(id: string, patch: (f: Partial<SessionSummary>) => void): SessionActions {
  async function attempt(call: () => Promise<unknown>): Promise<string | null> {
    try {
      await call();
      return null;
    } catch (e) {
      // Prompt and abort answer 409 only when the session is offline.
      if (e instanceof ApiError && e.status === 409) patch({ online: false });
      return errorText(e);
    }
  }
  return {
    send: (message, deliverAs, images = []) =>
      attempt(() =>
        sendPrompt(
          id,
          message,
          deliverAs,
          images.length ? images.map(({ mimeType, data }) => ({ mimeType, data })) : undefined,
        )
      ),
    abort: () => attempt(() => abortSession(id)),
    setAsk: (ask) =>
      attempt(async () => {
        const saved = await setPolicy(id, ask);
        patch({ ask: saved.ask });
      }),
    async remove(title) {
      if (!confirm(`Delete "${title}" and its whole history? This cannot be undone.`)) return;
      try {
        await deleteSession(id);
        location.assign("/");
      } catch (e) {
        if (e instanceof ApiError && e.status === 401) return;
        if (e instanceof ApiError && e.status === 409) patch({ online: true });
        alert(`Not deleted: ${errorText(e)}`);
      }
    },
  };
}
