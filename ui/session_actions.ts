/**
 * What a person can do to a session from its page: prompt (with images or not), abort, set the ask set,
 * delete; errors become messages (a 401 has already raised the sign-in prompt, through ui/api.ts).
 */
import type { AskSet, DeliverAs, SessionSummary } from "../lib/protocol.ts";
import { ApiError, errorText } from "./api.ts";
import { abortSession, deleteSession, sendPrompt, setPolicy } from "./rest.ts";
import type { ComposerImage } from "./steer.ts";

export interface SessionActions {
  /**
   * Resolves to an error message, or null once the daemon took it.
   * @param force send though someone else holds the wheel (audited as `wheel.override`)
   */
  send(
    message: string,
    deliverAs: DeliverAs,
    images?: ComposerImage[],
    force?: boolean,
  ): Promise<string | null>;
  abort(force?: boolean): Promise<string | null>;
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
      // Prompt and abort answer 409 when the session is offline, or for a held wheel or a reached budget.
      if (e instanceof ApiError && e.status === 409 && !/is steering until|budget reached/.test(e.message)) {
        patch({ online: false });
      }
      return errorText(e);
    }
  }
  return {
    send: (message, deliverAs, images = [], force = false) =>
      attempt(() =>
        sendPrompt(
          id,
          message,
          deliverAs,
          images.length ? images.map(({ mimeType, data }) => ({ mimeType, data })) : undefined,
          force,
        )
      ),
    abort: (force = false) => attempt(() => abortSession(id, force)),
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
