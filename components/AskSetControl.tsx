/**
 * The session's ask set (which tool calls wait for a person): none, the tools that change things
 * (`bash, edit, write`), every tool, or a custom list. Saved with `PUT /api/sessions/:id/policy`; the live
 * session list then carries the new set back.
 */
import { useEffect, useState } from "preact/hooks";
import type { AskSet } from "../lib/protocol.ts";

type Choice = "none" | "changes" | "all" | "custom";
const CHANGES = ["bash", "edit", "write"];

function choiceOf(ask: AskSet): Choice {
  if (ask === "all") return "all";
  if (ask.length === 0) return "none";
  return [...ask].sort().join(",") === CHANGES.join(",") ? "changes" : "custom";
}

/** The ask set a choice stands for; `custom` is the comma- or space-separated tool names typed. */
export function askSetOf(choice: Choice, custom: string): AskSet {
  if (choice === "all") return "all";
  if (choice === "none") return [];
  if (choice === "changes") return CHANGES;
  return [...new Set(custom.split(/[\s,]+/).filter(Boolean))];
}

interface Props {
  ask: AskSet;
  /** Resolves to an error message, or null once saved. */
  onSave(ask: AskSet): Promise<string | null>;
}

export function AskSetControl({ ask, onSave }: Props) {
  const [choice, setChoice] = useState<Choice>(choiceOf(ask));
  const [custom, setCustom] = useState(Array.isArray(ask) ? ask.join(", ") : "");
  const [note, setNote] = useState<{ kind: "ok" | "error"; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  // Another tab (or the daemon) changed it: show what stands.
  const key = JSON.stringify(ask);
  useEffect(() => {
    setChoice(choiceOf(ask));
    if (Array.isArray(ask)) setCustom(ask.join(", "));
  }, [key]);

  async function save(e: Event) {
    e.preventDefault();
    setBusy(true);
    const error = await onSave(askSetOf(choice, custom));
    setBusy(false);
    setNote(error ? { kind: "error", text: error } : { kind: "ok", text: "Saved." });
  }

  return (
    <section class="panel ask-set" aria-label="Approvals">
      <h2>Ask before</h2>
      <form class="ask-form" onSubmit={save}>
        <select
          name="ask"
          aria-label="Tool calls that wait for approval"
          value={choice}
          onChange={(e) => (setChoice((e.target as HTMLSelectElement).value as Choice), setNote(null))}
        >
          <option value="none">no tool (run freely)</option>
          <option value="changes">bash, edit, write</option>
          <option value="all">every tool</option>
          <option value="custom">these tools…</option>
        </select>
        {choice === "custom" && (
          <input
            type="text"
            name="ask-custom"
            aria-label="Tool names, comma separated"
            placeholder="bash, edit"
            value={custom}
            onInput={(e) => setCustom((e.target as HTMLInputElement).value)}
          />
        )}
        <button type="submit" class="small" disabled={busy}>Save</button>
        {note && <span class={`note small ${note.kind}`} role="status">{note.text}</span>}
      </form>
    </section>
  );
}
