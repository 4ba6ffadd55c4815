/**
 * lvmh-agent: a pi extension that mirrors one pi session to an lvmh daemon (protocol v1, Transport 1) and lets
 * the daemon steer it (`prompt`, `abort`) and approve its tool calls. Bundled by `scripts/build_plugin.ts`
 * into the one Node-compatible ESM file users load, `plugin/lvmh-agent.mjs`, with `ws` inside; it imports
 * nothing from pi, so the same file loads in pi 0.73.1 and 1.6.0.
 *
 * Configuration (environment): LVMH_URL (ws://host:8686/agent/ws) and LVMH_TOKEN, both required, else the
 * plugin registers nothing and pi works as usual; LVMH_AGENT=1 inside a container the daemon spawned;
 * LVMH_REPO (group/project) from the spawn metadata, else read best effort from the cwd's git remote;
 * LVMH_STATE_DIR for the per-session seq files [~/.pi/lvmh-agent]; LVMH_DISABLED=1 turns it off;
 * LVMH_ASK (tools always asked about, `all` or a comma list) and LVMH_ASK_TIMEOUT (seconds) for approvals.
 *
 * Rules it keeps: handlers return at once (pi awaits them inside its event queue), except a tool call that
 * waits for a person's approval; socket I/O happens later, from a bounded buffer; reconnects forever (and
 * notices a silent daemon within 15 s); errors go to ~/.pi/lvmh-agent.log and never reach pi.
 */
import { bind } from "./binding.ts";
import { type AgentOptions, type Config, disabled, readConfig } from "./config.ts";
import { housekeeping } from "./housekeeping.ts";
import { makeLogger } from "./log.ts";
import type { PiApi } from "./pi_types.ts";

export { toMessage } from "./mapping.ts";
export { messageImages, Origins } from "./origins.ts";
export { repoFromRemote } from "./repo.ts";
export type { AgentOptions } from "./config.ts";

/**
 * Build the pi extension factory.
 * @param options overrides for tests and benchmarks: url, token, agent, repo, stateDir, logFile, home, env,
 *   heartbeat (shorter ping and dead-daemon timings).
 * @returns the factory; it never throws, and registers nothing when the URL or token is missing.
 */
export function createLvmhAgent(
  options: AgentOptions = {},
): (pi: PiApi) => void {
  return function lvmhAgent(pi) {
    let cfg: Config;
    try {
      cfg = readConfig(options);
      if (disabled(cfg, options)) return;
    } catch {
      return;
    }
    const log = makeLogger(cfg.logFile, cfg.token);
    try {
      housekeeping(cfg);
      bind(pi, cfg, log);
    } catch (err) {
      log("lvmh-agent failed to start", err);
    }
  };
}

/** pi loads this: the factory configured from the environment. */
export default createLvmhAgent();
