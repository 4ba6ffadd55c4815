/**
 * The browser's steering calls beyond text prompts: a prompt with images, a model switch and a rename
 * (`POST /prompt` with `images`, `PUT /model`, `PUT /name`). A prompt resolves to an error message or null; a
 * model switch and a rename to what the daemon said: an error, or the commandId the plugin's `command_result`
 * will answer (the page shows that answer: "switched", "refused: no API key").
 */
import type { DeliverAs, ModelEntry, ThinkingLevel } from "../lib/protocol.ts";
import { SignInRequired } from "./api.ts";
import { pageLive } from "./live.ts";
import { renameSession, sendPrompt, setModel } from "./rest.ts";

/** An image as the composer holds it: what the API takes, plus what the thumbnail needs. */
export interface ComposerImage {
  mimeType: string;
  /** base64, without the `data:` prefix. */
  data: string;
  name: string;
  /** Decoded bytes. */
  size: number;
}

/** A command the daemon refused (`error`), or took and sent to the plugin as `commandId`. */
export type CommandSent = { error: string; commandId?: undefined } | { error: null; commandId: string };

/** Steering calls for one session. */
export interface SteerActions {
  send(message: string, deliverAs: DeliverAs, images: ComposerImage[]): Promise<string | null>;
  setModel(provider: string, model: string, thinking?: ThinkingLevel): Promise<CommandSent>;
  rename(name: string): Promise<CommandSent>;
}

/** The steering calls of session `id`. */
export function steerActions(id: string): SteerActions {
  async function attempt(call: () => Promise<unknown>): Promise<string | null> {
    try {
      await call();
      return null;
    } catch (e) {
      return failure(e);
    }
  }
  async function command(call: () => Promise<{ commandId: string }>): Promise<CommandSent> {
    try {
      return { error: null, commandId: (await call()).commandId };
    } catch (e) {
      return { error: failure(e) };
    }
  }
  return {
    send: (message, deliverAs, images) =>
      attempt(() =>
        sendPrompt(id, message, deliverAs, images.map(({ mimeType, data }) => ({ mimeType, data })))
      ),
    setModel: (provider, model, thinking) =>
      command(() => setModel(id, { provider, model, ...(thinking ? { thinking } : {}) })),
    rename: (name) => command(() => renameSession(id, name)),
  };
}

function failure(e: unknown): string {
  if (e instanceof SignInRequired) {
    pageLive().requireSignIn();
    return "Sign in again to send.";
  }
  return (e as Error).message;
}

/** Whether the session's current model takes images: null when the session did not say. */
export function takesImages(
  s: { models?: ModelEntry[]; model: string | null; provider: string | null },
): boolean | null {
  const m = s.models?.find((m) => m.id === s.model && m.provider === s.provider);
  return m ? m.input.includes("image") : null;
}
