/**
 * The session snapshot sent in `hello` and `session_info`, read from pi's ctx.
 */
import type { Config } from "./config.ts";
import type { PiContext } from "./pi_types.ts";
import { repoFromGit } from "./repo.ts";

/** The protocol's session snapshot. */
export interface SessionInfo {
  id: string;
  name: string | null;
  cwd: string | null;
  model: string | null;
  provider: string | null;
  agent: boolean;
  repo: string | null;
  startedAt: number;
}

/** A string field cut to the daemon's bound (a hello it rejects would be retried forever), or null. */
export function field(value: unknown, max: number): string | null {
  return value === undefined || value === null ? null : String(value).slice(0, max);
}

/** The `hello` session snapshot, from pi's ctx. */
export function snapshot(ctx: PiContext, cfg: Config): SessionInfo {
  const sm = ctx.sessionManager;
  const cwd = ctx.cwd ?? sm.getCwd?.() ?? "";
  const started = Date.parse(sm.getHeader?.()?.timestamp ?? "");
  return {
    id: sm.getSessionId(),
    name: field(sm.getSessionName?.(), 1000),
    cwd: field(cwd, 4096),
    model: field(ctx.model?.id, 200),
    provider: field(ctx.model?.provider, 200),
    agent: cfg.agent,
    repo: field(cfg.repo ?? repoFromGit(cwd), 500),
    startedAt: Number.isFinite(started) ? started : Date.now(),
  };
}
