/**
 * The plugin's settings: from the factory's options (tests, benchmarks), else pi's environment.
 */
import os from "node:os";
import path from "node:path";
import process from "node:process";
import type { AskSet } from "./frames.ts";

/** What tests and hosts may override; everything else comes from the environment. */
export interface AgentOptions {
  url?: string;
  token?: string;
  agent?: boolean;
  repo?: string | null;
  stateDir?: string;
  logFile?: string;
  home?: string;
  env?: Record<string, string | undefined>;
  /** Heartbeat timings in ms (tests shorten them): ping interval and silence before the socket is dead. */
  heartbeat?: { pingMs: number; deadMs: number };
}

/** The resolved settings of one factory run. */
export interface Config {
  url: string;
  token: string;
  agent: boolean;
  repo: string | null;
  stateDir: string;
  logFile: string;
  /** Tools this pi always asks about (LVMH_ASK), on top of the daemon's ask set. */
  ask: AskSet;
  /** LVMH_ASK_TIMEOUT in ms, or 0 for none: a waiting approval is then never decided by the clock. */
  askTimeoutMs: number;
  /** Heartbeat timings, when not the defaults. */
  heartbeat?: { pingMs: number; deadMs: number };
  /** pi's global settings.json (PI_CODING_AGENT_DIR, else ~/.pi/agent), guarded after a web model switch. */
  settingsFile: string;
  /**
   * LVMH_RESUME_NOTICE=not-saved: the bridge resumed this session but pi had no file for it, so the plugin
   * tells the session's timeline (once) that pi starts without the earlier conversation.
   */
  notSaved: boolean;
}

/** `all`, or the comma list's names; empty or unset = none. */
export function parseAsk(value: string | undefined): AskSet {
  const v = (value ?? "").trim();
  if (v === "all") return "all";
  return v.split(",").map((s) => s.trim()).filter(Boolean);
}

/** Settings from `options`, else the environment. */
export function readConfig(options: AgentOptions): Config {
  const env = options.env ?? process.env;
  const home = options.home ?? os.homedir();
  const timeout = Number(env.LVMH_ASK_TIMEOUT ?? "");
  return {
    url: options.url ?? env.LVMH_URL ?? "",
    token: options.token ?? env.LVMH_TOKEN ?? "",
    agent: options.agent ?? env.LVMH_AGENT === "1",
    repo: options.repo ?? (env.LVMH_REPO || null),
    stateDir: options.stateDir ??
      (env.LVMH_STATE_DIR || path.join(home, ".pi", "lvmh-agent")),
    logFile: options.logFile ?? path.join(home, ".pi", "lvmh-agent.log"),
    settingsFile: path.join(
      (env.PI_CODING_AGENT_DIR || "").replace(/^~(?=$|\/)/, home) ||
        path.join(home, ".pi", "agent"),
      "settings.json",
    ),
    ask: parseAsk(env.LVMH_ASK),
    askTimeoutMs: Number.isFinite(timeout) && timeout > 0 ? timeout * 1000 : 0,
    heartbeat: options.heartbeat,
    notSaved: env.LVMH_RESUME_NOTICE === "not-saved",
  };
}

/** True when the plugin must stay off: no URL or token, or LVMH_DISABLED=1. */
export function disabled(cfg: Config, options: AgentOptions): boolean {
  return !cfg.url || !cfg.token || options.env?.LVMH_DISABLED === "1" ||
    process.env.LVMH_DISABLED === "1";
}
