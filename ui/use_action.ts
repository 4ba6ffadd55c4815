/**
 * The busy flag and error line of a page's actions (admin pages, the spawn panel, notification settings): run
 * one action at a time, show its error, and reload what the page lists after it (whether or not it failed,
 * the list then shows what the daemon now holds). A 401 has already raised the sign-in prompt (ui/api.ts).
 */
import { useState } from "preact/hooks";
import { errorText } from "./api.ts";

export interface Action {
  busy: boolean;
  error: string | null;
  setError(message: string | null): void;
  /** Run `fn`, then the reload; an exception from either becomes the error line. */
  run(fn: () => Promise<void>): Promise<void>;
}

/**
 * @param reload what to reread after each action, if anything
 * @param describe the error line of a failure (`errorText` unless the page knows better)
 */
export function useAction(
  reload?: () => Promise<void>,
  describe: (e: unknown) => string = errorText,
): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function run(fn: () => Promise<void>) {
    setBusy(true);
    setError(null);
    try {
      await fn();
      await reload?.();
    } catch (e) {
      setError(describe(e));
    } finally {
      setBusy(false);
    }
  }
  return { busy, error, setError, run };
}
