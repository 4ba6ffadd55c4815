/**
 * The session snapshot sent in `hello` and `session_info`, read from pi's ctx.
 */
import { FieldMax } from "../../lib/wire.ts";
import type { Config } from "./config.ts";
import type { ModelEntry, SessionInfo } from "./frames.ts";
import type { PiApi, PiContext, PiModel } from "./pi_types.ts";
import { repoFromGit } from "./repo.ts";

/** Most models a snapshot lists (fewer than the daemon takes): a session_list carries every snapshot. */
export const MAX_MODELS = Math.min(50, FieldMax.models);

/** The models pi can use now (with auth, the current one first), from ctx.modelRegistry; never throws. */
export function modelList(ctx: PiContext): ModelEntry[] {
  const out: ModelEntry[] = [];
  const seen = new Set<string>();
  const add = (m: PiModel | null | undefined, hasAuth?: boolean) => {
    const provider = field(m?.provider, FieldMax.model), id = field(m?.id, FieldMax.model);
    if (
      !m || !provider || !id || seen.has(`${provider}/${id}`) ||
      out.length >= MAX_MODELS
    ) return;
    seen.add(`${provider}/${id}`);
    let auth = hasAuth;
    try {
      auth ??= !!ctx.modelRegistry?.hasConfiguredAuth(m);
    } catch {
      auth = false;
    }
    const input = Array.isArray(m.input)
      ? m.input.filter((x) => typeof x === "string").slice(0, FieldMax.modelInputs)
        .map((x) => x.slice(0, FieldMax.modelInput))
      : ["text"];
    out.push({
      provider,
      id,
      name: field(m.name, FieldMax.model) ?? id,
      input,
      hasAuth: auth,
    });
  };
  add(ctx.model);
  try {
    for (const m of ctx.modelRegistry?.getAvailable() ?? []) add(m, true);
  } catch { /* an older pi without a registry: only the current model */ }
  return out;
}

/** A string field cut to the daemon's bound (a hello it rejects would be retried forever), or null. */
export function field(value: unknown, max: number): string | null {
  return value === undefined || value === null ? null : String(value).slice(0, max);
}

/** pi's thinking level now, or null where pi has none or fails to say. */
export function thinkingLevel(pi: PiApi): string | null {
  try {
    return field(pi.getThinkingLevel?.(), FieldMax.thinkingLevel);
  } catch {
    return null;
  }
}

/** What the snapshot reads from `pi` rather than ctx. */
export interface SnapshotExtras {
  thinkingLevel?: string | null;
  /** pi 1.6.0 (native agent_settled) applies a switch from the next turn, 0.73.1 from the next run. */
  native?: boolean;
}

/**
 * The `hello` session snapshot, from pi's ctx. Built whole (every field the schema defaults is set), so it is
 * typed as the schema's output: a renamed or added required field fails the type check here.
 */
export function snapshot(
  ctx: PiContext,
  cfg: Config,
  extras: SnapshotExtras = {},
): SessionInfo {
  const sm = ctx.sessionManager;
  const cwd = ctx.cwd ?? sm.getCwd?.() ?? "";
  const started = Date.parse(sm.getHeader?.()?.timestamp ?? "");
  return {
    id: sm.getSessionId(),
    name: field(sm.getSessionName?.(), FieldMax.sessionName),
    cwd: field(cwd, FieldMax.cwd) ?? "",
    model: field(ctx.model?.id, FieldMax.model),
    provider: field(ctx.model?.provider, FieldMax.model),
    agent: cfg.agent,
    repo: field(cfg.repo ?? repoFromGit(cwd), FieldMax.repo),
    startedAt: Number.isFinite(started) ? started : Date.now(),
    models: modelList(ctx),
    thinkingLevel: field(extras.thinkingLevel, FieldMax.thinkingLevel),
    modelSwitch: extras.native ? "next_turn" : "next_run",
  };
}
