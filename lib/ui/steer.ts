/**
 * The browser's steering calls beyond text prompts: a prompt with images, a model switch and a rename
 * (`POST /prompt` with `images`, `PUT /model`, `PUT /name`). Each resolves to an error message or null.
 */
import type { DeliverAs, ModelEntry, ThinkingLevel } from "../protocol.ts";
import { api, SignInRequired } from "./api.ts";
import { pageLive } from "./live.ts";

/** An image as the composer holds it: what the API takes, plus what the thumbnail needs. */
export interface ComposerImage {
  mimeType: string;
  /** base64, without the `data:` prefix. */
  data: string;
  name: string;
  /** Decoded bytes. */
  size: number;
}

/** Steering calls for one session. */
export interface SteerActions {
  send(message: string, deliverAs: DeliverAs, images: ComposerImage[]): Promise<string | null>;
  setModel(provider: string, model: string, thinking?: ThinkingLevel): Promise<string | null>;
  rename(name: string): Promise<string | null>;
}

const path = (id: string, what: string) => `/api/sessions/${encodeURIComponent(id)}/${what}`;
const put = (body: unknown) => ({ method: "PUT", body: JSON.stringify(body) });

/** The steering calls of session `id`. */
export function steerActions(id: string): SteerActions {
  async function attempt(call: () => Promise<unknown>): Promise<string | null> {
    try {
      await call();
      return null;
    } catch (e) {
      if (e instanceof SignInRequired) {
        pageLive().requireSignIn();
        return "Sign in again to send.";
      }
      return (e as Error).message;
    }
  }
  return {
    send: (message, deliverAs, images) =>
      attempt(() =>
        api(path(id, "prompt"), {
          method: "POST",
          body: JSON.stringify({
            message,
            deliverAs,
            images: images.map(({ mimeType, data }) => ({ mimeType, data })),
          }),
        })
      ),
    setModel: (provider, model, thinking) =>
      attempt(() => api(path(id, "model"), put({ provider, model, ...(thinking ? { thinking } : {}) }))),
    rename: (name) => attempt(() => api(path(id, "name"), put({ name }))),
  };
}

/** Whether the session's current model takes images: null when the session did not say. */
export function takesImages(
  s: { models?: ModelEntry[]; model: string | null; provider: string | null },
): boolean | null {
  const m = s.models?.find((m) => m.id === s.model && m.provider === s.provider);
  return m ? m.input.includes("image") : null;
}
