/**
 * The daemon's steering commands beyond prompts: `set_model` (pi.setModel, then the thinking level) and
 * `set_name` (pi.setSessionName). Each answers through `done(error?)`, which becomes the persisted
 * `command_result`, so the browser can say "switched" or "refused: no API key".
 */
import { FieldMax } from "../../lib/wire.ts";
import type { FrameOf } from "./frames.ts";
import type { Logger } from "./log.ts";
import type { PiApi, PiContext } from "./pi_types.ts";
import type { SettingsGuard } from "./settings_guard.ts";

/** What the commands need from the factory run. */
export interface SteerDeps {
  pi: PiApi;
  ctx: () => PiContext | null;
  /** pi 0.73.1 only: undoes setModel's write of the global default. */
  guard: SettingsGuard | null;
  /** The session snapshot may have changed: send session_info if it did. */
  changed: () => void;
  log: Logger;
}

/** Marks the model_select events our own switch causes, so the guard is not released by them. */
export interface SwitchState {
  switching: boolean;
}

/**
 * Switch the session's model as a `set_model` frame asks.
 * @returns a promise that settles once `done` was called; never rejects.
 */
export async function setModel(
  f: FrameOf<"set_model">,
  deps: SteerDeps,
  state: SwitchState,
  done: (error?: string) => void,
): Promise<void> {
  const ctx = deps.ctx();
  const provider = String(f.provider ?? ""), id = String(f.model ?? "");
  try {
    if (!ctx) return done("no live pi session");
    if (typeof deps.pi.setModel !== "function") {
      return done("this pi cannot switch models");
    }
    const model = ctx.modelRegistry?.find(provider, id);
    if (!model) return done(`unknown model ${provider}/${id}`);
    deps.guard?.before();
    state.switching = true;
    let ok: boolean;
    try {
      ok = await deps.pi.setModel(model);
    } finally {
      state.switching = false;
    }
    if (!ok) return done("refused: no API key");
    if (typeof f.thinking === "string") deps.pi.setThinkingLevel?.(f.thinking);
    const thinking = typeof f.thinking === "string" ? deps.pi.getThinkingLevel?.() : null;
    await deps.guard?.after({ provider, model: id, thinking });
    deps.changed();
    done();
  } catch (err) {
    deps.log(`set_model ${provider}/${id} failed`, err);
    done(String((err as Error)?.message ?? err));
  }
}

/** Rename the session as a `set_name` frame asks (pi's session name: the terminal shows it too). */
export function setName(
  f: FrameOf<"set_name">,
  deps: SteerDeps,
  done: (error?: string) => void,
): void {
  try {
    if (!deps.ctx()) return done("no live pi session");
    if (typeof deps.pi.setSessionName !== "function") {
      return done("this pi cannot rename sessions");
    }
    deps.pi.setSessionName(String(f.name ?? "").slice(0, FieldMax.newName));
    deps.changed();
    done();
  } catch (err) {
    deps.log("set_name failed", err);
    done(String((err as Error)?.message ?? err));
  }
}
