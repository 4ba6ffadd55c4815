/**
 * A secret shown once, right after it was made (a token, a webhook's signing secret, a generated GitLab hook
 * secret): read-only, with a copy button that falls back to selecting the text where the clipboard is not
 * allowed (plain http on another host), and Done to hide it for good.
 */
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";

interface ShownOnceProps {
  /** The input's id (tests and the copy fallback find it by this). */
  id: string;
  value: string;
  label: string;
  /** Data attributes naming what was made, e.g. `{"data-new-token": "alice"}`. */
  data: Record<string, string>;
  onDone(): void;
  /** What the secret is and where it goes. */
  children: ComponentChildren;
}

export function ShownOnce({ id, value, label, data, onDone, children }: ShownOnceProps) {
  const [copied, setCopied] = useState(false);
  async function copy() {
    try {
      await navigator.clipboard.writeText(value);
      setCopied(true);
    } catch {
      (document.getElementById(id) as HTMLInputElement | null)?.select();
    }
  }
  return (
    <div class="new-token" role="status" {...data}>
      <p class="small">{children}</p>
      <input id={id} type="text" readOnly value={value} aria-label={label} />
      <button type="button" class="small copy" onClick={() => void copy()}>
        {copied ? "Copied" : "Copy"}
      </button>
      <button type="button" class="ghost small" onClick={onDone}>Done</button>
    </div>
  );
}
