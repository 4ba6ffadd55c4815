/**
 * The browser's steering calls beyond prompts: a model switch and a rename (`PUT /model`, `PUT /name`). Each
 * resolves to what the daemon said: an error, or the commandId the plugin's `command_result` will answer (the
 * page shows that answer: "switched", "refused: no API key"). Prompts, with images or not, are
 * `sessionActions().send`.
 */
import type { ModelEntry, ThinkingLevel } from "../lib/protocol.ts";
import { errorText } from "./api.ts";
import { renameSession, setModel } from "./rest.ts";

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
  setModel(provider: string, model: string, thinking?: ThinkingLevel): Promise<CommandSent>;
  rename(name: string): Promise<CommandSent>;
}

/** The steering calls of session `id`. */
export function steerActions(id: string): SteerActions {
  async function command(call: () => Promise<{ commandId: string }>): Promise<CommandSent> {
    try {
      return { error: null, commandId: (await call()).commandId };
    } catch (e) {
      return { error: errorText(e) };
    }
  }
  return {
    setModel: (provider, model, thinking) =>
      command(() => setModel(id, { provider, model, ...(thinking ? { thinking } : {}) })),
    rename: (name) => command(() => renameSession(id, name)),
  };
}

/** Whether the session's current model takes images: null when the session did not say. */
export function takesImages(
  s: { models?: ModelEntry[]; model: string | null; provider: string | null },
): boolean | null {
  const m = s.models?.find((m) => m.id === s.model && m.provider === s.provider);
  return m ? m.input.includes("image") : null;
}
