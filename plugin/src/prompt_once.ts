/**
 * The promptIds this session's link has taken (feature `prompt_once`): the daemon keeps a hook's prompt until
 * its `command_result` arrives and sends it again after a restart or reconnect, so the same frame may come
 * twice. A repeat is never run again: while the first is still queued for pi it is ignored (the first one's
 * answer will come), once answered it gets that answer again. A prompt pi refused is forgotten, so a repeat may
 * try again. Kept on the link, which outlives factory runs; bounded to the most recent ones. The link keeps a
 * second set, by commandId, for aborts, model and name changes.
 */

/** How many promptIds are remembered (a re-send comes right after a reconnect, not hundreds of prompts later). */
export const PROMPTS_REMEMBERED = 1000;

/** What to do with a `prompt` frame. */
export type PromptVerdict =
  | { run: true }
  | { run: false; answered: false }
  | { run: false; answered: true };

/** Taken promptIds and whether each was answered. */
export class TakenPrompts {
  /** promptId → answered (true once pi took it). Insertion order is age order. */
  #taken = new Map<string, boolean>();
  #max: number;

  constructor(max = PROMPTS_REMEMBERED) {
    this.#max = max;
  }

  /** Decide on a frame's promptId; the first sight of an id takes it. A frame without an id always runs. */
  take(promptId: unknown): PromptVerdict {
    if (typeof promptId !== "string" || !promptId) return { run: true };
    const answered = this.#taken.get(promptId);
    if (answered === undefined) {
      this.#taken.set(promptId, false);
      while (this.#taken.size > this.#max) {
        this.#taken.delete(this.#taken.keys().next().value!);
      }
      return { run: true };
    }
    return answered ? { run: false, answered: true } : { run: false, answered: false };
  }

  /** The prompt's answer went out: ok (pi took it, a repeat gets ok again) or refused (forgotten). */
  answered(promptId: unknown, ok: boolean): void {
    if (typeof promptId !== "string" || !this.#taken.has(promptId)) return;
    if (ok) this.#taken.set(promptId, true);
    else this.#taken.delete(promptId);
  }

  /** The run that queued the unanswered ones ended with its queue: a repeat may run in the next one. */
  forgetUnanswered(): void {
    for (const [id, answered] of [...this.#taken]) {
      if (!answered) this.#taken.delete(id);
    }
  }

  /** How many ids are remembered. */
  get size(): number {
    return this.#taken.size;
  }
}
