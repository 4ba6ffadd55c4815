/**
 * pi's data as protocol shapes: messages, tool results and arguments. Pure functions, no I/O.
 */
import { FieldMax } from "../../lib/wire.ts";
import { MAX_TEXT, PREVIEW_CHARS } from "./constants.ts";
import type { Message as ProtocolMessage } from "./frames.ts";
import { type ImageRef, messageImages, userText, type WebPrompt } from "./origins.ts";
import type { PiMessage } from "./pi_types.ts";

/**
 * The protocol's Message as the plugin builds it: every field the schema defaults is set (so it is typed as
 * the schema's output), plus the details of pi's own roles, which the daemon keeps as they are.
 */
export type Message = ProtocolMessage & {
  piRole?: string;
  stopReason?: string;
  errorMessage?: string;
  toolName?: string;
  isError?: boolean;
};

/** `s` cut to `n` characters (the last one an ellipsis); anything that is not a string is returned as is. */
export function clip<T>(s: T, n = MAX_TEXT): T {
  return typeof s === "string" && s.length > n ? (s.slice(0, n - 1) + "…") as T : s;
}

/** A message's id, from pi's role and timestamp and the seq its first event takes, cut to the protocol's bound. */
export function messageId(m: PiMessage | null | undefined, seq: number): string {
  return `${m?.role}-${m?.timestamp ?? 0}-${seq}`.slice(0, FieldMax.messageId);
}

/** Text of pi content (a string or an array of text/image/thinking/toolCall parts). */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  let out = "";
  for (const part of content) {
    if (part?.type === "text") out += part.text ?? "";
    else if (part?.type === "image") out += "[image]";
  }
  return out;
}

const ROLES = new Set(["user", "assistant", "toolResult", "system"]);

/** The protocol role for a pi message role: pi's extra roles map onto the four the protocol knows. */
export function mapRole(role: unknown): Message["role"] {
  return ROLES.has(role as string) ? role as Message["role"] : role === "bashExecution" ? "user" : "system";
}

/**
 * A pi AgentMessage as the protocol's Message shape; pi's extra roles are mapped onto the four known ones.
 * @param m the pi message
 * @param id the message id to use
 * @param web the delivered prompt this user message shows, if any (its images are the ones the daemon keeps)
 */
export function toMessage(
  m: PiMessage | null | undefined,
  id: string,
  web: WebPrompt | null = null,
): Message {
  const role = mapRole(m?.role);
  let text = "";
  let thinking: string | null = null;
  const toolCalls: Message["toolCalls"] = [];
  let images: ImageRef[] = [];
  if (m?.role === "assistant" && Array.isArray(m.content)) {
    for (const part of m.content) {
      if (part?.type === "text") text += part.text ?? "";
      else if (part?.type === "thinking") {
        thinking = (thinking ?? "") + (part.thinking ?? "");
      } else if (part?.type === "toolCall") {
        let argsJson;
        try {
          argsJson = JSON.stringify(part.arguments ?? {});
        } catch {
          argsJson = "{}";
        }
        toolCalls.push({
          id: String(part.id ?? ""),
          name: String(part.name ?? ""),
          argsJson: clip(argsJson),
        });
      }
    }
  } else if (m?.role === "bashExecution") {
    text = `!${m.command ?? ""}\n${m.output ?? ""}`;
  } else if (typeof m?.summary === "string") {
    text = m.summary;
  } else if (m?.role === "user") {
    // Images travel as parts of their own, named by sha256; the daemon has the bytes of a web prompt's.
    images = messageImages(m.content, web);
    text = images.length ? userText(m.content) : contentText(m?.content);
  } else {
    text = contentText(m?.content);
  }
  const out: Message = {
    role,
    id,
    text: clip(text),
    thinking: clip(thinking),
    toolCalls,
    toolCallId: m?.role === "toolResult" ? String(m.toolCallId ?? "") : null,
  };
  if (images.length) out.images = images.slice(0, FieldMax.images);
  if (role !== m?.role) out.piRole = String(m?.role ?? "");
  if (m?.role === "assistant") {
    if (m.stopReason) out.stopReason = m.stopReason;
    if (m.errorMessage) {
      out.errorMessage = clip(String(m.errorMessage), PREVIEW_CHARS);
    }
  }
  if (m?.role === "toolResult") {
    out.toolName = String(m.toolName ?? "");
    out.isError = !!m.isError;
  }
  return out;
}

/** Text of a tool result (`{content}` or a string), cut to `n` characters from the start or the end. */
export function resultText(
  result: unknown,
  n: number,
  fromEnd = false,
): string {
  const text = typeof result === "string" ? result : contentText((result as { content?: unknown })?.content);
  if (text.length <= n) return text;
  return fromEnd ? "…" + text.slice(text.length - n + 1) : text.slice(0, n - 1) + "…";
}

/** A detached copy of tool arguments (pi's object may change after the handler returns), or a preview. */
export function safeArgs(args: unknown): { args: unknown; size: number } {
  try {
    const json = JSON.stringify(args ?? {});
    if (json.length > MAX_TEXT) {
      return { args: { truncated: true, preview: clip(json) }, size: MAX_TEXT };
    }
    return { args: JSON.parse(json), size: json.length };
  } catch {
    return { args: { unserializable: true }, size: 30 };
  }
}
