/**
 * The prompt box. While the agent runs, Enter steers (interrupts after the current tool) and Alt+Enter queues a
 * follow-up (waits until the run ends); the two buttons say which is which. Disabled, with the reason, offline.
 */
import { useRef, useState } from "preact/hooks";
import type { DeliverAs } from "../lib/protocol.ts";

interface ComposerProps {
  online: boolean;
  running: boolean;
  /** Resolves to an error message, or null on success. */
  onSend(message: string, deliverAs: DeliverAs): Promise<string | null>;
  onAbort(): Promise<string | null>;
}

export function Composer({ online, running, onSend, onAbort }: ComposerProps) {
  const [text, setText] = useState("");
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState<{ kind: "ok" | "error"; text: string } | null>(null);
  const area = useRef<HTMLTextAreaElement>(null);

  async function send(deliverAs: DeliverAs) {
    const message = text.trim();
    if (!message || busy || !online) return;
    setBusy(true);
    const error = await onSend(message, deliverAs);
    setBusy(false);
    if (error) return setNote({ kind: "error", text: error });
    setText("");
    setNote({
      kind: "ok",
      text: deliverAs === "followUp" ? "Queued as a follow-up." : running ? "Sent to steer." : "Sent.",
    });
    area.current?.focus();
  }

  async function abort() {
    const error = await onAbort();
    setNote(error ? { kind: "error", text: error } : { kind: "ok", text: "Abort requested." });
  }

  function onKeyDown(e: KeyboardEvent) {
    if (e.key !== "Enter" || e.shiftKey || e.isComposing) return;
    e.preventDefault();
    void send(e.altKey ? "followUp" : "steer");
  }

  const disabled = !online;
  return (
    <form
      class={`composer ${running ? "is-running" : ""}`}
      onSubmit={(e) => {
        e.preventDefault();
        void send("steer");
      }}
    >
      {disabled && (
        <p class="offline-reason" role="status">
          This session is offline: prompts can be sent again when its pi process reconnects.
        </p>
      )}
      <label class="sr-only" for="prompt">Message to the agent</label>
      <textarea
        id="prompt"
        ref={area}
        rows={2}
        disabled={disabled}
        placeholder={disabled
          ? "Session offline"
          : running
          ? "Steer the running agent (Enter) or queue a follow-up (Alt+Enter)"
          : "Message the agent (Enter to send, Shift+Enter for a new line)"}
        value={text}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        onKeyDown={onKeyDown}
      />
      <div class="composer-actions">
        <button type="submit" class="primary steer" disabled={disabled || busy || !text.trim()}>
          {running ? "Steer" : "Send"} <kbd>Enter</kbd>
        </button>
        {running && (
          <button
            type="button"
            class="followup"
            disabled={disabled || busy || !text.trim()}
            onClick={() => void send("followUp")}
          >
            Follow-up <kbd>Alt+Enter</kbd>
          </button>
        )}
        {running && (
          <button
            type="button"
            class="danger abort"
            disabled={disabled}
            onClick={() => void abort()}
          >
            Abort
          </button>
        )}
        {note && (
          <span class={`note ${note.kind}`} role={note.kind === "error" ? "alert" : "status"}>
            {note.text}
          </span>
        )}
      </div>
    </form>
  );
}
