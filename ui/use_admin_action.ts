/**
 * The busy flag and error line of an admin page's actions: run one action at a time, show its error, and
 * reload the page's list after it (whether or not it failed, the list shows what the daemon now holds).
 */
import { useState } from "preact/hooks";
import { errorText } from "./api.ts";

export interface AdminAction {
  busy: boolean;
  error: string | null;
  setError(message: string | null): void;
  /** Run `fn`, then `reload`; an exception from either becomes the error line. */
  run(fn: () => Promise<void>): Promise<void>;
}

export function useAdminAction(reload: () => Promise<void>): AdminAction {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function run(fn: () => Promise<void>) {
    setBusy(true);
    setError(null);
    try {
      await fn();
      await reload();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  }
  return { busy, error, setError, run };
}
