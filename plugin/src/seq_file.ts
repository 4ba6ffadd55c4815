/**
 * A session's last used seq, kept in `<stateDir>/seq/<sessionId>` so `pi -c` continues the numbering.
 * Writes are batched (at most one per SEQ_WRITE_MS) and atomic (temp file, then rename).
 */
import fs from "node:fs";
import path from "node:path";
import process from "node:process";
import { SEQ_WRITE_MS } from "./constants.ts";
import { unref } from "./timers.ts";

/** The seq file of one session. */
export class SeqFile {
  #file: string;
  #written = 0;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #current: () => number;
  #onError: (msg: string, err?: unknown) => void;

  /**
   * @param current the last seq used now (read when a write happens)
   * @param onError told about a failed write; never throws
   */
  constructor(
    stateDir: string,
    sessionId: string,
    current: () => number,
    onError: (msg: string, err?: unknown) => void,
  ) {
    this.#file = path.join(stateDir, "seq", sessionId);
    this.#current = current;
    this.#onError = onError;
  }

  /** The seq stored on disk, 0 for a new session. */
  read(): number {
    let last = 0;
    try {
      last = Number.parseInt(fs.readFileSync(this.#file, "utf8"), 10) || 0;
    } catch { /* a new session */ }
    this.#written = last;
    return last;
  }

  /** The seq changed: write it soon. */
  dirty(): void {
    this.#timer ??= unref(setTimeout(() => this.#write(), SEQ_WRITE_MS));
  }

  /** Write now (pi is about to exit). */
  writeSync(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    const last = this.#current();
    try {
      fs.mkdirSync(path.dirname(this.#file), { recursive: true });
      fs.writeFileSync(this.#file, String(last));
      this.#written = last;
    } catch (err) {
      this.#onError("cannot save seq", err);
    }
  }

  #write() {
    this.#timer = null;
    const last = this.#current();
    if (last === this.#written) return;
    this.#written = last;
    const tmp = `${this.#file}.${process.pid}.tmp`;
    fs.promises.mkdir(path.dirname(this.#file), { recursive: true })
      .then(() => fs.promises.writeFile(tmp, String(last)))
      .then(() => fs.promises.rename(tmp, this.#file))
      .catch((err) => this.#onError(`cannot save seq: ${err?.message ?? err}`));
  }
}
