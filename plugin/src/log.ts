/**
 * The plugin's log: problems go to a file (never to pi's terminal), batched, bounded, token-free.
 */
import fs from "node:fs";
import path from "node:path";
import process from "node:process";
import { processSlot } from "./process_slot.ts";
import { unref } from "./timers.ts";

/** Append one line (with an optional error's stack); `flushSync` writes what is pending before pi exits. */
export interface Logger {
  (msg: string, err?: unknown): void;
  flushSync(): void;
}

/**
 * A batched, size-bounded appender to `file` that never writes `secret`; it never throws. One logger per
 * file and secret per process, shared by every factory run.
 */
export function makeLogger(file: string, secret: string): Logger {
  const loggers = processSlot("loggers", () => new Map<string, Logger>());
  const key = `${file}\0${secret}`;
  const known = loggers.get(key);
  if (known) return known;
  let lines: string[] = [];
  let timer: ReturnType<typeof setTimeout> | null = null;
  const write = () => {
    timer = null;
    const data = lines.join("");
    lines = [];
    fs.promises.mkdir(path.dirname(file), { recursive: true })
      .then(() => fs.promises.appendFile(file, data, { mode: 0o600 }))
      .catch(() => {});
  };
  const log = ((msg: string, err?: unknown) => {
    try {
      if (lines.length >= 1000) return;
      const detail = err ? `: ${(err as Error)?.stack ?? err}` : "";
      let line = `${new Date().toISOString()} [${process.pid}] ${msg}${detail}\n`;
      // A token can reach a message through a URL (LVMH_URL with ?token=, an error that quotes it).
      if (secret && secret.length >= 6) line = line.split(secret).join("***");
      lines.push(line.replace(/([?&]token=)[^&\s"']+/gi, "$1***"));
      timer ??= unref(setTimeout(write, 100));
    } catch { /* logging must never fail pi */ }
  }) as Logger;
  log.flushSync = () => {
    try {
      if (timer) clearTimeout(timer);
      timer = null;
      if (!lines.length) return;
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.appendFileSync(file, lines.join(""), { mode: 0o600 });
      lines = [];
    } catch { /* ignore */ }
  };
  loggers.set(key, log);
  return log;
}
