/**
 * The conversation's items. Assistant text is Markdown rendered by `ui/markdown.ts` (raw HTML escaped,
 * unsafe links dropped), the only place this UI sets HTML; everything else is text Preact escapes.
 */
import { Component, Fragment } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import type { ApprovalDecision } from "../lib/protocol.ts";
import type { ApprovalView } from "../ui/approval_view.ts";
import type { Item, ToolCall, UserImage } from "../ui/conversation.ts";
import { imageLabel } from "../ui/format.ts";
import { formatCost, formatTokens } from "../ui/format.ts";
import type { SinceSummary } from "../ui/last_seen.ts";
import { renderMarkdown, renderMarkdownFinished } from "../ui/markdown.ts";
import { type MessageRow, sameRows } from "../ui/message_blocks.ts";
import { ApprovalCard } from "./ApprovalCard.tsx";
import { SinceCard } from "./SinceCard.tsx";
import { ToolCard } from "./ToolCard.tsx";

/** @param finished the text no longer changes (its HTML is remembered); false while it streams */
export function Markdown({ text, finished = true }: { text: string; finished?: boolean }) {
  const html = finished ? renderMarkdownFinished(text) : renderMarkdown(text);
  return <div class="md" dangerouslySetInnerHTML={{ __html: html }} />;
}

function Thinking({ text }: { text: string }) {
  return (
    <details class="thinking">
      <summary>Thinking</summary>
      <pre>{text}</pre>
    </details>
  );
}

/**
 * A user message's images: thumbnails that open full size in a modal dialog (a link to the image without
 * script), and a placeholder for one the daemon never had (pasted in pi's terminal).
 */
function UserImages({ images }: { images: UserImage[] }) {
  const [open, setOpen] = useState<UserImage | null>(null);
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = dialog.current;
    if (open && d && !d.open) d.showModal();
  }, [open]);
  return (
    <div class="msg-images">
      {images.map((img, i) =>
        img.src
          ? (
            <a
              key={i}
              class="msg-image"
              href={img.src}
              target="_blank"
              rel="noopener"
              title={`${imageLabel(img)}: click to enlarge`}
              onClick={(e) => {
                e.preventDefault();
                setOpen(img);
              }}
            >
              <img src={img.src} alt={imageLabel(img)} loading="lazy" decoding="async" />
            </a>
          )
          : (
            <span
              key={i}
              class="msg-image missing"
              role="img"
              aria-label={`${imageLabel(img)}, sent from the terminal`}
            >
              {imageLabel(img)}, sent from the terminal
            </span>
          )
      )}
      {open?.src && (
        <dialog
          ref={dialog}
          class="image-viewer"
          aria-label={imageLabel(open)}
          onClose={() => setOpen(null)}
          onClick={() => dialog.current?.close()}
        >
          <img src={open.src} alt={imageLabel(open)} />
        </dialog>
      )}
    </div>
  );
}

interface ItemProps {
  item: Item;
  /** The tool calls of an assistant item, in order. */
  calls: ToolCall[];
  /** The approval asked for each of `calls` (same index), if any. */
  approvals?: (ApprovalView | null)[];
  onDecide?(id: string, decision: ApprovalDecision, reason?: string): Promise<string | null>;
}

function ItemView({ item, calls, approvals = [], onDecide }: ItemProps) {
  switch (item.kind) {
    case "user":
      return (
        <article class="msg user" data-seq={item.seq}>
          <div class="who">
            You
            {item.web && <span class="via">from the web{item.web.by ? ` · ${item.web.by}` : ""}</span>}
          </div>
          {item.text && <div class="text">{item.text}</div>}
          {item.images.length > 0 && <UserImages images={item.images} />}
        </article>
      );
    case "assistant":
      return (
        <article class="msg assistant" data-seq={item.seq}>
          {item.thinking && <Thinking text={item.thinking} />}
          {item.text && <Markdown text={item.text} />}
          {calls.length > 0 && (
            <div class="tools">
              {calls.map((c, i) => {
                const a = approvals[i];
                return (
                  <Fragment key={c.id}>
                    <ToolCard call={c} />
                    {a && onDecide && <ApprovalCard approval={a} onDecide={onDecide} />}
                  </Fragment>
                );
              })}
            </div>
          )}
        </article>
      );
    case "toolResult":
      return (
        <article class="msg tool-result" data-seq={item.seq}>
          <div class="label">Tool result</div>
          <pre class="result">{item.text}</pre>
        </article>
      );
    case "system":
      return (
        <article class="msg system" data-seq={item.seq}>
          <pre>{item.text}</pre>
        </article>
      );
    case "run": {
      const u = item.usage;
      const parts = [
        u.inputTokens !== undefined && `${formatTokens(u.inputTokens)} in`,
        u.outputTokens !== undefined && `${formatTokens(u.outputTokens)} out`,
        u.totalCost !== undefined && formatCost(u.totalCost),
      ].filter(Boolean);
      return (
        <div class="run-end" data-seq={item.seq}>
          <span>Run finished{parts.length ? ` · ${parts.join(" · ")}` : ""}</span>
        </div>
      );
    }
    case "notice":
      return <div class="notice" data-seq={item.seq}>{item.text}</div>;
  }
}

/** One item; skips re-rendering (and re-running Markdown) unless the item or one of its tool calls changed. */
export class MessageItem extends Component<ItemProps> {
  override shouldComponentUpdate(next: ItemProps): boolean {
    const { item, calls, approvals = [] } = this.props;
    return next.item !== item || next.calls.length !== calls.length ||
      next.calls.some((c, i) => c !== calls[i]) || (next.approvals ?? []).some((a, i) => a !== approvals[i]);
  }
  override render() {
    return <ItemView {...this.props} />;
  }
}

interface BlockProps {
  rows: MessageRow[];
  /** The "since you last looked" divider, when it goes before one of these rows (by item key). */
  divider: { before: string; since: SinceSummary } | null;
  onDecide?(id: string, decision: ApprovalDecision, reason?: string): Promise<string | null>;
}

/**
 * A block of consecutive messages (ui/message_blocks.ts): skipped by Preact as a whole while its rows are
 * the same, and one box for the browser while off screen (`.msg-block` has content-visibility, as do the
 * messages in it), so neither a render nor a layout walks every message held.
 */
export class MessageBlockView extends Component<BlockProps> {
  override shouldComponentUpdate(next: BlockProps): boolean {
    const { rows, divider, onDecide } = this.props;
    return !sameRows(next.rows, rows) || next.onDecide !== onDecide ||
      next.divider?.before !== divider?.before || next.divider?.since !== divider?.since;
  }
  override render() {
    const { rows, divider, onDecide } = this.props;
    return (
      <div class="msg-block">
        {rows.map((r) => (
          <Fragment key={r.item.key}>
            {divider?.before === r.item.key && <SinceCard since={divider.since} />}
            <MessageItem item={r.item} calls={r.calls} approvals={r.approvals} onDecide={onDecide} />
          </Fragment>
        ))}
      </div>
    );
  }
}

/** The assistant message being streamed, reasoning folded apart; "…" before the first answer delta. */
export function StreamingMessage({ text, thinking = "" }: { text: string; thinking?: string }) {
  return (
    <article class="msg assistant streaming" aria-busy="true">
      {thinking && <Thinking text={thinking} />}
      {text
        ? <Markdown text={text} finished={false} />
        : <div class="typing" aria-label="the agent is writing">…</div>}
    </article>
  );
}
