/**
 * The prompt box. While the agent runs, Enter steers (interrupts after the current tool) and Alt+Enter queues a
 * follow-up (waits until the run ends); the two buttons say which is which. Disabled, with the reason, offline;
 * but a stopped spawned session takes a prompt without images, which resumes it (the daemon keeps the prompt
 * until the new worker is online, then delivers it once).
 * With the session given, it also takes images (pasted, dropped or picked; thumbnails with a remove button; a
 * warning when the model takes no images), and carries the model picker and a rename button.
 */
import type { CommandOutcome } from "../ui/conversation.ts";
import { useMemo, useRef, useState } from "preact/hooks";
import type { DeliverAs, SessionSummary } from "../lib/protocol.ts";
import { IMAGE_TYPES, MAX_IMAGE_BYTES, MAX_IMAGES, MAX_IMAGES_TOTAL_BYTES } from "../lib/image_limits.ts";
import { type ComposerImage, steerActions, takesImages } from "../ui/steer.ts";
import { ModelPicker } from "./ModelPicker.tsx";

interface ComposerProps {
  online: boolean;
  /** Offline, but a prompt resumes it (a stopped or crashed spawned session). */
  resumable?: boolean;
  running: boolean;
  /**
   * Resolves to an error message, or null on success; images only when the session is given. `force`: sent
   * though someone else holds the wheel.
   */
  onSend(
    message: string,
    deliverAs: DeliverAs,
    images: ComposerImage[],
    force?: boolean,
  ): Promise<string | null>;
  onAbort(): Promise<string | null>;
  /** The session: enables images, the model picker and renaming. */
  session?: SessionSummary;
  /** The plugin's answers to the model switches and renames sent from here, by commandId. */
  commands?: Record<string, CommandOutcome>;
  /** Someone else holds the wheel: "alice is steering until 14:05" (prompts then need "Send anyway"). */
  steeredBy?: { holder: string; text: string } | null;
}

const MiB = 1024 * 1024;
const REENCODE_NOTE =
  "pi 1.6.0 re-encodes images over 2000×2000 px or 4.5 MB, and replaces ones it cannot read " +
  "with text.";
const RENAME_SENT = "Rename sent.";

function readImage(file: File): Promise<ComposerImage> {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => {
      const url = String(r.result);
      resolve({
        mimeType: file.type,
        data: url.slice(url.indexOf(",") + 1),
        name: file.name || "image",
        size: file.size,
      });
    };
    r.onerror = () => reject(r.error);
    r.readAsDataURL(file);
  });
}

export function Composer(
  { online, resumable = false, running, onSend, onAbort, session, commands = {}, steeredBy = null }:
    ComposerProps,
) {
  const [text, setText] = useState("");
  const [busy, setBusy] = useState(false);
  const [sentNote, setNote] = useState<{ kind: "ok" | "error"; text: string } | null>(null);
  const [renameId, setRenameId] = useState<string | null>(null);
  const renamed = renameId ? commands[renameId] : undefined;
  const note = renamed && sentNote?.text === RENAME_SENT
    ? renamed.ok
      ? { kind: "ok" as const, text: "Renamed." }
      : { kind: "error" as const, text: `Not renamed: ${renamed.error}` }
    : sentNote;
  const [images, setImages] = useState<ComposerImage[]>([]);
  const area = useRef<HTMLTextAreaElement>(null);
  const picker = useRef<HTMLInputElement>(null);
  const steer = useMemo(() => session ? steerActions(session.id) : null, [session?.id]);
  const vision = session ? takesImages(session) : null;

  async function addFiles(files: File[]) {
    const next = [...images];
    for (const f of files) {
      if (!(IMAGE_TYPES as readonly string[]).includes(f.type)) {
        return setNote({ kind: "error", text: `${f.name || "file"}: not a PNG, JPEG, GIF or WebP image` });
      }
      if (next.length >= MAX_IMAGES) {
        return setNote({ kind: "error", text: `At most ${MAX_IMAGES} images per prompt.` });
      }
      if (f.size > MAX_IMAGE_BYTES) {
        return setNote({
          kind: "error",
          text: `${f.name || "image"} is larger than ${MAX_IMAGE_BYTES / MiB} MB.`,
        });
      }
      if (next.reduce((n, i) => n + i.size, f.size) > MAX_IMAGES_TOTAL_BYTES) {
        return setNote({
          kind: "error",
          text: `Images may take ${MAX_IMAGES_TOTAL_BYTES / MiB} MB together.`,
        });
      }
      next.push(await readImage(f));
      setImages([...next]);
    }
  }

  function imageFiles(list: DataTransferItemList | null | undefined): File[] {
    return [...(list ?? [])].filter((i) => i.kind === "file" && i.type.startsWith("image/"))
      .map((i) => i.getAsFile()).filter((f): f is File => f !== null);
  }

  async function send(deliverAs: DeliverAs, force = false) {
    const message = text.trim();
    if (!message || busy || disabled) return;
    const resuming = !online;
    if (resuming && images.length) {
      return setNote({
        kind: "error",
        text: "A stopped session takes no images: remove them, or resume it first.",
      });
    }
    setBusy(true);
    const error = await onSend(message, deliverAs, images, force);
    setBusy(false);
    if (error) return setNote({ kind: "error", text: error });
    setText("");
    setImages([]);
    setNote({
      kind: "ok",
      text: resuming
        ? "Resuming the session: the prompt is delivered once it is back."
        : deliverAs === "followUp"
        ? "Queued as a follow-up."
        : running
        ? "Sent to steer."
        : "Sent.",
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

  const disabled = !online && !resumable;
  /** Only a prompt can go to a stopped session: images, the model and renames wait for its worker. */
  const offlineOnly = !online;
  return (
    <form
      class={`composer ${running ? "is-running" : ""}`}
      onSubmit={(e) => {
        e.preventDefault();
        void send("steer");
      }}
      onDragOver={(e) => steer && e.preventDefault()}
      onDrop={(e) => {
        if (!steer) return;
        e.preventDefault();
        void addFiles([...(e.dataTransfer?.files ?? [])]);
      }}
    >
      {steeredBy && online && (
        <p class="steered-by" role="status" data-steered-by={steeredBy.holder}>
          {steeredBy.text}: your prompt waits unless you send it anyway.
        </p>
      )}
      {!online && (
        <p class="offline-reason" role="status">
          {resumable
            ? "This session is stopped: sending a prompt resumes it."
            : "This session is offline: prompts can be sent again when its pi process reconnects."}
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
          : !online
          ? "Message the agent to resume this session"
          : running
          ? "Steer the running agent (Enter) or queue a follow-up (Alt+Enter)"
          : "Message the agent (Enter to send, Shift+Enter for a new line)"}
        value={text}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        onKeyDown={onKeyDown}
        onPaste={(e) => {
          const files = steer ? imageFiles(e.clipboardData?.items) : [];
          if (!files.length) return;
          e.preventDefault();
          void addFiles(files);
        }}
      />
      {images.length > 0 && (
        <div class="composer-images" data-images={images.length}>
          {images.map((img, i) => (
            <figure class="composer-image">
              <img
                src={`data:${img.mimeType};base64,${img.data}`}
                alt={img.name}
                width={64}
                height={64}
              />
              <button
                type="button"
                class="ghost small remove-image"
                aria-label={`Remove ${img.name}`}
                onClick={() => setImages(images.filter((_, j) => j !== i))}
              >
                ×
              </button>
            </figure>
          ))}
          <p class="small muted">
            {vision === false
              ? (
                <strong class="warn-no-images" role="alert">
                  {session?.model ?? "This model"} takes no images: pi will send a placeholder instead.
                </strong>
              )
              : REENCODE_NOTE}
          </p>
        </div>
      )}
      <div class="composer-actions">
        {steer && (
          <>
            <input
              ref={picker}
              type="file"
              accept={IMAGE_TYPES.join(",")}
              multiple
              hidden
              onChange={(e) => {
                const input = e.target as HTMLInputElement;
                void addFiles([...(input.files ?? [])]).finally(() => input.value = "");
              }}
            />
            <button
              type="button"
              class="ghost attach"
              disabled={offlineOnly}
              onClick={() => picker.current?.click()}
            >
              Image…
            </button>
          </>
        )}
        <button type="submit" class="primary steer" disabled={disabled || busy || !text.trim()}>
          {running ? "Steer" : "Send"} <kbd>Enter</kbd>
        </button>
        {steeredBy && online && (
          <button
            type="button"
            class="send-anyway"
            data-send-anyway
            title={`Send though ${steeredBy.holder} is steering (recorded in the audit log)`}
            disabled={busy || !text.trim()}
            onClick={() => void send("steer", true)}
          >
            Send anyway
          </button>
        )}
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
        {session && steer && (
          <ModelPicker
            models={session.models ?? []}
            provider={session.provider}
            model={session.model}
            modelSwitch={session.modelSwitch}
            online={online}
            results={commands}
            onSwitch={(p, m) => steer.setModel(p, m)}
          />
        )}
        {session && steer && (
          <button
            type="button"
            class="ghost small rename"
            disabled={offlineOnly}
            onClick={async () => {
              const name = prompt("New name for this session", session.name ?? "")?.trim();
              if (!name) return;
              const sent = await steer.rename(name);
              setRenameId(sent.commandId ?? null);
              setNote(
                sent.error !== null ? { kind: "error", text: sent.error } : { kind: "ok", text: RENAME_SENT },
              );
            }}
          >
            Rename…
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
