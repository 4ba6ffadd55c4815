/**
 * Once per process, in the background: rotate a large log, forget seq files of long-gone sessions.
 */
import fs from "node:fs";
import path from "node:path";
import type { Config } from "./config.ts";
import { LOG_MAX_BYTES, SEQ_KEEP_MS } from "./constants.ts";
import { processSlot } from "./process_slot.ts";

/** Start the clean-up (idempotent per process); never throws, never waits. */
export function housekeeping(cfg: Config): void {
  let first = false;
  processSlot("housekept", () => (first = true));
  if (first) cleanUp(cfg);
}

function cleanUp(cfg: Config): void {
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
