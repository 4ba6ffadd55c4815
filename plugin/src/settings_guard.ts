/**
 * pi 0.73.1's `setModel` also makes the model the global default (`defaultProvider`/`defaultModel` in
 * settings.json; `setThinkingLevel` writes `defaultThinkingLevel`), so a web switch in one session would
 * change every future session. The guard puts those fields back after pi's write, and keeps doing so while
 * this process lives: pi keeps the new default in memory and writes it again with later settings changes.
 * It takes pi's own lock (proper-lockfile's `<file>.lock` directory) for each write. pi 1.6.0 does not
 * write, so it gets no guard.
 */
import fs from "node:fs";
import type { Logger } from "./log.ts";
import { unref } from "./timers.ts";

/** How often the file is checked after a web switch (pi may rewrite it at any later settings change). */
export const GUARD_POLL_MS = 250;
/** How long a switch waits for pi's queued write before answering (pi writes within a tick or two). */
export const GUARD_WAIT_MS = 2_000;

/** The settings fields a web switch makes pi write on 0.73.1 (setModel, setThinkingLevel). */
const FIELDS = ["defaultProvider", "defaultModel", "defaultThinkingLevel"] as const;
type Defaults = Partial<Record<(typeof FIELDS)[number], unknown>>;

/** Keeps settings.json's default model and thinking level as they were before the first web switch. */
export class SettingsGuard {
  #file: string;
  #log: Logger;
  /** The file as it was before the first web switch (null: not read yet; undefined: there was none). */
  #original: { text: string; defaults: Defaults } | undefined | null = null;
  /** What the web switched to: a default equal to it (and not to the original) came from pi's write. */
  #web: Defaults | null = null;
  #timer: ReturnType<typeof setInterval> | null = null;

  constructor(file: string, log: Logger) {
    this.#file = file;
    this.#log = log;
  }

  /** Call before a web switch: remembers the defaults in force (only the first time). */
  before(): void {
    if (this.#original !== null) return;
    const text = this.#read();
    this.#original = text === null ? undefined : { text, defaults: defaultsOf(text) };
  }

  /**
   * Call after a web switch: waits (bounded) for pi's write of every switched field and undoes it, then keeps
   * watching for pi's later rewrites.
   */
  async after(web: { provider: string; model: string; thinking?: string | null }): Promise<void> {
    this.#web = {
      defaultProvider: web.provider,
      defaultModel: web.model,
      ...(web.thinking ? { defaultThinkingLevel: web.thinking } : {}),
    };
    this.#timer ??= unref(setInterval(() => this.check(), GUARD_POLL_MS));
    // pi's writes are queued (a promise chain): wait until the file names every switched value, undo them.
    const deadline = Date.now() + GUARD_WAIT_MS;
    const pending = new Set(this.#changed());
    while (pending.size && Date.now() < deadline) {
      const text = this.#read();
      const now = text === null ? {} : defaultsOf(text);
      for (const f of [...pending]) if (now[f] === this.#web[f]) pending.delete(f);
      this.check();
      if (pending.size) await new Promise((r) => setTimeout(r, 20));
    }
    for (let i = 0; i < 50 && this.check() === "busy"; i++) await new Promise((r) => setTimeout(r, 20));
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
   * Restore the fields pi wrote with the web's values.
   * @returns `restored` when it just did, `clean` when the file holds none of them, `busy` when pi holds its
   *   lock or the write failed (the next check tries again).
   */
  check(): "restored" | "clean" | "busy" {
    if (!this.#web || this.#original === null) return "clean";
    const text = this.#read();
    if (text === null) return "clean";
    const now = defaultsOf(text);
    const web = this.#web;
    if (!this.#changed().some((f) => now[f] === web[f])) return "clean";
    return this.#restore(text) ? "restored" : "busy";
  }

  /** The fields whose web value differs from the original one. */
  #changed(): (typeof FIELDS)[number][] {
    const web = this.#web ?? {}, original = this.#original?.defaults ?? {};
    return FIELDS.filter((f) => f in web && web[f] !== original[f]);
  }

  #restore(current: string): boolean {
    const lock = `${this.#file}.lock`;
    try {
      fs.mkdirSync(lock);
    } catch {
      return false; // pi holds its lock: try again at the next check
    }
    try {
      const now = defaultsOf(current), web = this.#web ?? {};
      const fields = this.#changed().filter((f) => now[f] === web[f]);
      fs.writeFileSync(this.#file, restored(current, fields, this.#original ?? undefined));
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

/** The guarded fields a settings text names (absent or unreadable: undefined). */
function defaultsOf(text: string): Defaults {
  try {
    const s = JSON.parse(text);
    return Object.fromEntries(FIELDS.map((f) => [f, s?.[f]]));
  } catch {
    return {};
  }
}

/**
 * The settings text with `fields` put back as they were: the original bytes when nothing else changed,
 * else the current settings with only those fields reset.
 */
function restored(
  current: string,
  fields: readonly string[],
  original: { text: string; defaults: Defaults } | undefined,
): string {
  let now: Record<string, unknown>;
  try {
    now = JSON.parse(current);
  } catch {
    return current;
  }
  const next = { ...now };
  const was = (original?.defaults ?? {}) as Record<string, unknown>;
  for (const f of fields) {
    if (was[f] === undefined) delete next[f];
    else next[f] = was[f];
  }
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
