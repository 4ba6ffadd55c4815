/**
 * Once per process, in the background: rotate a large log, forget seq files of long-gone sessions.
 */
import fs from "node:fs";
import path from "node:path";
import type { Config } from "./config.ts";
import { LOG_MAX_BYTES, SEQ_KEEP_MS } from "./constants.ts";
import { globalState } from "./runtime.ts";

/** Start the clean-up (idempotent per process); never throws, never waits. */
export function housekeeping(cfg: Config): void {
  const g = globalState();
  if (g.housekept) return;
  g.housekept = true;
  const p = fs.promises;
  p.stat(cfg.logFile)
    .then((st) => st.size > LOG_MAX_BYTES ? p.rename(cfg.logFile, `${cfg.logFile}.1`) : undefined)
    .catch(() => {});
  const dir = path.join(cfg.stateDir, "seq");
  const cutoff = Date.now() - SEQ_KEEP_MS;
  p.readdir(dir).then((names) =>
    Promise.all(names.map(async (name) => {
      const file = path.join(dir, name);
      if ((await p.stat(file)).mtimeMs < cutoff) await p.unlink(file);
    }))
  ).catch(() => {});
}
