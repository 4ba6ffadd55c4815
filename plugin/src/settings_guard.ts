/**
 * pi 0.73.1's `setModel` also makes the model the global default (`defaultProvider`/`defaultModel` in
 * settings.json), so a web switch in one session would change every future session. The guard puts the
 * file's default back after pi's write, and keeps doing so while this process lives: pi keeps the new default
 * in memory and writes it again with any later settings change. It takes pi's own lock (proper-lockfile's
 * `<file>.lock` directory) for each write. pi 1.6.0 does not write, so it gets no guard.
 */
import fs from "node:fs";
import type { Logger } from "./log.ts";
import { unref } from "./runtime.ts";

/** How often the file is checked after a web switch (pi may rewrite it at any later settings change). */
export const GUARD_POLL_MS = 250;
/** How long a switch waits for pi's queued write before answering (pi writes within a tick or two). */
export const GUARD_WAIT_MS = 2_000;

interface Defaults {
  provider: unknown;
  model: unknown;
}

/** Keeps settings.json's default model as it was before the first web switch. */
export class SettingsGuard {
  #file: string;
  #log: Logger;
  /** The file as it was before the first web switch (null: not read yet; undefined: there was none). */
  #original: { text: string; defaults: Defaults } | undefined | null = null;
  /** The model the web switched to: a default equal to it came from pi's write of that switch. */
  #web: Defaults | null = null;
  #timer: ReturnType<typeof setInterval> | null = null;

  constructor(file: string, log: Logger) {
    this.#file = file;
    this.#log = log;
  }

  /** Call before a web switch: remembers the default in force (only the first time). */
  before(): void {
    if (this.#original !== null) return;
    const text = this.#read();
    this.#original = text === null ? undefined : { text, defaults: defaultsOf(text) };
  }

  /**
   * Call after a web switch to `provider/model`: waits (bounded) for pi's write and undoes it, then keeps
   * watching.
   */
  async after(provider: string, model: string): Promise<void> {
    this.#web = { provider, model };
    const original = this.#original?.defaults;
    this.#timer ??= unref(setInterval(() => this.check(), GUARD_POLL_MS));
    if (
      original && original.provider === provider && original.model === model
    ) return;
    const deadline = Date.now() + GUARD_WAIT_MS;
    // pi's write is queued (a promise chain): wait until the file names the web model, then undo it.
    while (Date.now() < deadline) {
      if (this.check() === "restored") return;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Someone chose a model in the terminal: pi's default is then that person's wish, so stop guarding. */
  release(): void {
    this.stop();
    this.#original = null;
    this.#web = null;
  }

  /** Stop watching (session end). */
  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  /**
   * Restore the file if pi wrote the web model as its default.
   * @returns `restored` when it just did, `clean` when the file does not name the web model, `busy` when pi
   *   holds its lock or the write failed (the next check tries again).
   */
  check(): "restored" | "clean" | "busy" {
    const web = this.#web;
    const original = this.#original?.defaults;
    if (!web || this.#original === null) return "clean";
    if (
      original && original.provider === web.provider &&
      original.model === web.model
    ) return "clean";
    const text = this.#read();
    if (text === null) return "clean";
    const now = defaultsOf(text);
    if (now.provider !== web.provider || now.model !== web.model) {
      return "clean";
    }
    return this.#restore(text) ? "restored" : "busy";
  }

  #restore(current: string): boolean {
    const lock = `${this.#file}.lock`;
    try {
      fs.mkdirSync(lock);
    } catch {
      return false; // pi holds its lock: try again at the next check
    }
    try {
      fs.writeFileSync(this.#file, restored(current, this.#original ?? undefined));
      return true;
    } catch (err) {
      this.#log("cannot restore the default model in settings.json", err);
      return false;
    } finally {
      try {
        fs.rmdirSync(lock);
      } catch { /* gone already */ }
    }
  }

  #read(): string | null {
    try {
      return fs.readFileSync(this.#file, "utf8");
    } catch {
      return null;
    }
  }
}

/** The default model a settings text names (fields absent or unreadable: undefined). */
function defaultsOf(text: string): Defaults {
  try {
    const s = JSON.parse(text);
    return { provider: s?.defaultProvider, model: s?.defaultModel };
  } catch {
    return { provider: undefined, model: undefined };
  }
}

/**
 * The settings text with the original default put back: the original bytes when nothing else changed,
 * else the current settings with only the two fields reset.
 */
function restored(
  current: string,
  original: { text: string; defaults: Defaults } | undefined,
): string {
  let now: Record<string, unknown>;
  try {
    now = JSON.parse(current);
  } catch {
    return current;
  }
  const put = (o: Record<string, unknown>, d: Defaults | undefined) => {
    const out = { ...o };
    delete out.defaultProvider;
    delete out.defaultModel;
    if (d?.provider !== undefined) out.defaultProvider = d.provider;
    if (d?.model !== undefined) out.defaultModel = d.model;
    return out;
  };
  const next = put(now, original?.defaults);
  if (original) {
    try {
      if (sameJson(next, JSON.parse(original.text))) return original.text;
    } catch { /* the original was not JSON: write ours */ }
  }
  return JSON.stringify(next, null, 2);
}

function sameJson(a: unknown, b: unknown): boolean {
  const norm = (v: unknown): unknown =>
    Array.isArray(v) ? v.map(norm) : v && typeof v === "object"
      ? Object.fromEntries(
        Object.keys(v).sort().map((
          k,
        ) => [k, norm((v as Record<string, unknown>)[k])]),
      )
      : v;
  return JSON.stringify(norm(a)) === JSON.stringify(norm(b));
}
