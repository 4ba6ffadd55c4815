/**
 * A session exported to share: Markdown (the conversation, tool calls as fenced blocks, their outputs
 * collapsed, who prompted, tokens and cost per run), JSONL (the stored events exactly as `/events` gives them)
 * or one self-contained HTML file (styles inlined, no script, every text escaped). Each is streamed page by
 * page from the event log, so a session of any length exports in bounded memory.
 */
import { eventJson, type EventRow } from "../event_codec.ts";
import type { ExportFormat } from "../protocol/search.ts";
import { promptSource } from "./runs.ts";
// The page's own Markdown rendering (raw HTML escaped, unsafe links dropped), so an answer reads as it does there.
import { renderMarkdown } from "../../ui/markdown.ts";

/** Events read per page. */
const PAGE = 1000;
/** Characters of one tool output kept in Markdown and HTML (JSONL keeps everything stored). */
const OUTPUT_CHARS = 20_000;

/** What an export says about its session at the top. */
export interface ExportHead {
  id: string;
  title: string;
  cwd: string;
  repo: string | null;
  model: string | null;
  startedAt: number;
}

/** The `Content-Type` and file extension of each format. */
export const EXPORT_TYPES: Record<ExportFormat, { type: string; ext: string }> = {
  md: { type: "text/markdown; charset=utf-8", ext: "md" },
  jsonl: { type: "application/x-ndjson; charset=utf-8", ext: "jsonl" },
  html: { type: "text/html; charset=utf-8", ext: "html" },
};

/** A file name from a session's title: letters, digits and dashes only, never empty. */
export function exportFileName(title: string, format: ExportFormat): string {
  const slug = title.normalize("NFKD").replace(/[^\w\s-]/g, " ").trim().replace(/[\s_-]+/g, "-").slice(0, 80)
    .replace(/^-+|-+$/g, "").toLowerCase();
  return `${slug || "session"}.${EXPORT_TYPES[format].ext}`;
}

/**
 * The export as a byte stream, read page by page as the client takes it.
 * @param pages reads the session's events after a seq, seq ascending (`store.eventRows`)
 */
export function exportStream(
  format: ExportFormat,
  head: ExportHead,
  pages: (after: number, limit: number) => EventRow[],
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const writer = format === "jsonl" ? null : format === "md" ? new MarkdownWriter() : new HtmlWriter();
  let after = 0;
  let started = false;
  return new ReadableStream({
    pull(controller) {
      let out = "";
      if (!started) {
        started = true;
        out += writer?.head(head) ?? "";
      }
      const rows = pages(after, PAGE);
      if (rows.length) {
        after = rows[rows.length - 1].seq;
        out += writer
          ? rows.map((r) => writer.event(r)).join("")
          : rows.map((r) => eventJson(r) + "\n").join("");
      }
      if (rows.length < PAGE) {
        out += writer?.end() ?? "";
        if (out) controller.enqueue(encoder.encode(out));
        controller.close();
        return;
      }
      if (out) controller.enqueue(encoder.encode(out));
    },
  });
}

/** One event of the conversation, as both writers read it. */
type Part =
  | { kind: "user"; text: string; by: string | null; source: string }
  | { kind: "assistant"; text: string; thinking: string | null; error: string | null }
  | { kind: "call"; tool: string; args: string }
  | { kind: "output"; tool: string; text: string; isError: boolean }
  | { kind: "run_start"; n: number; at: number }
  | { kind: "run_end"; input: number; output: number; cost: number };

function clip(text: string): string {
  return text.length > OUTPUT_CHARS
    ? text.slice(0, OUTPUT_CHARS) + `\n… (${text.length - OUTPUT_CHARS} more)`
    : text;
}

/** Reads the events into parts, in order. */
abstract class ConversationWriter {
  #runs = 0;

  abstract head(head: ExportHead): string;
  abstract part(part: Part): string;
  abstract end(): string;

  event(row: EventRow): string {
    const part = this.#partOf(row);
    return part ? this.part(part) : "";
  }

  #partOf(row: EventRow): Part | null {
    switch (row.type) {
      case "agent_start":
        return { kind: "run_start", n: ++this.#runs, at: row.ts };
      case "agent_end": {
        const u = (JSON.parse(row.payload).usage ?? {}) as Record<string, number>;
        return {
          kind: "run_end",
          input: u.inputTokens ?? 0,
          output: u.outputTokens ?? 0,
          cost: u.totalCost ?? 0,
        };
      }
      case "message_end": {
        const p = JSON.parse(row.payload);
        const m = p.message ?? {};
        if (m.role === "user") {
          return {
            kind: "user",
            text: String(m.text ?? ""),
            by: p.from?.by ?? null,
            source: promptSource(p.from),
          };
        }
        if (m.role === "assistant") {
          const text = String(m.text ?? "");
          const thinking = m.thinking ? String(m.thinking) : null;
          const error = m.errorMessage ? String(m.errorMessage) : null;
          return text || thinking || error ? { kind: "assistant", text, thinking, error } : null;
        }
        return null;
      }
      case "tool_execution_start": {
        const p = JSON.parse(row.payload);
        const args = typeof p.args === "string" ? p.args : JSON.stringify(p.args ?? null, null, 2);
        return { kind: "call", tool: String(p.toolName ?? "?"), args: clip(args) };
      }
      case "tool_execution_end": {
        const p = JSON.parse(row.payload);
        return {
          kind: "output",
          tool: String(p.toolName ?? "?"),
          text: clip(String(p.resultPreview ?? "")),
          isError: !!p.isError,
        };
      }
      default:
        return null;
    }
  }
}

function iso(ts: number): string {
  return new Date(ts).toISOString().replace(".000Z", "Z");
}

/** A fence longer than any run of backticks inside `text`, so the text cannot close it. */
export function fenceFor(text: string): string {
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  return "`".repeat(Math.max(3, longest + 1));
}

function fenced(text: string, info = ""): string {
  const fence = fenceFor(text);
  return `${fence}${info}\n${text}\n${fence}\n`;
}

class MarkdownWriter extends ConversationWriter {
  head(h: ExportHead): string {
    const facts = [
      `- Session: \`${h.id}\``,
      `- Started: ${iso(h.startedAt)}`,
      h.cwd && `- Directory: \`${h.cwd}\``,
      h.repo && `- Repository: ${h.repo}`,
      h.model && `- Model: ${h.model}`,
    ].filter(Boolean);
    return `# ${h.title.replace(/\n/g, " ")}\n\n${facts.join("\n")}\n`;
  }

  part(p: Part): string {
    switch (p.kind) {
      case "run_start":
        return `\n## Run ${p.n} · ${iso(p.at)}\n`;
      case "user":
        return `\n**Prompt** (${p.by ? `${p.by}, ` : ""}${p.source}):\n\n${quote(p.text)}\n`;
      case "assistant":
        return (p.thinking
          ? `\n<details><summary>Thinking</summary>\n\n${fenced(p.thinking)}\n</details>\n`
          : "") +
          (p.text ? `\n${p.text}\n` : "") +
          (p.error ? `\n> **Error:** ${p.error.replace(/\n/g, " ")}\n` : "");
      case "call":
        return `\n${fenced(p.args, ` ${p.tool}`)}`;
      case "output":
        return `\n<details><summary>${p.isError ? "Error from" : "Output of"} ${p.tool}</summary>\n\n${
          fenced(p.text)
        }\n</details>\n`;
      case "run_end":
        return `\n*Run ended: ${p.input} input and ${p.output} output tokens, $${p.cost.toFixed(4)}.*\n`;
    }
  }

  end(): string {
    return "";
  }
}

function quote(text: string): string {
  return text.split("\n").map((l) => `> ${l}`).join("\n");
}

/** HTML text: every character that could start markup or end an attribute is escaped. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const STYLE =
  `body{font:15px/1.5 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;color:#1b1b1f;background:#fff}
h1{font-size:1.4rem}h2{font-size:1.05rem;margin-top:2rem;border-top:1px solid #ddd;padding-top:1rem}
.facts{color:#555;font-size:.9em}.msg{margin:.75rem 0;padding:.5rem .75rem;border-radius:8px;white-space:pre-wrap;overflow-wrap:anywhere}
.user{background:#eef2ff}.assistant{background:#f6f6f7}.error{background:#fff0f0;color:#a00}
.md{white-space:normal}.md>:first-child{margin-top:0}.md>:last-child{margin-bottom:0}.md code{background:#0000000d;padding:0 .2em;border-radius:3px}
.by{font-size:.8em;color:#555;display:block;margin-bottom:.25rem}pre{background:#f3f3f3;padding:.5rem;border-radius:6px;overflow:auto;white-space:pre-wrap}
details{margin:.25rem 0}summary{cursor:pointer;color:#444}.run-end{color:#555;font-size:.85em;font-style:italic}
@media (prefers-color-scheme:dark){body{background:#17171a;color:#e6e6e6}.user{background:#222841}.assistant,pre{background:#222226}.facts,.by,.run-end,summary{color:#aaa}}`;

class HtmlWriter extends ConversationWriter {
  head(h: ExportHead): string {
    const facts = [
      `Session <code>${escapeHtml(h.id)}</code>`,
      `started ${escapeHtml(iso(h.startedAt))}`,
      h.cwd && `in <code>${escapeHtml(h.cwd)}</code>`,
      h.repo && `repository ${escapeHtml(h.repo)}`,
      h.model && `model ${escapeHtml(h.model)}`,
    ].filter(Boolean).join(" · ");
    // A content security policy that allows no script at all, should anything ever slip through.
    return `<!doctype html>\n<html lang="en"><head><meta charset="utf-8">` +
      `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">` +
      `<meta name="viewport" content="width=device-width, initial-scale=1">` +
      `<title>${escapeHtml(h.title)} · lvmh</title><style>${STYLE}</style></head><body>\n` +
      `<h1>${escapeHtml(h.title)}</h1><p class="facts">${facts}</p>\n`;
  }

  part(p: Part): string {
    switch (p.kind) {
      case "run_start":
        return `<h2>Run ${p.n} · ${escapeHtml(iso(p.at))}</h2>\n`;
      case "user":
        return `<div class="msg user"><span class="by">Prompt${
          p.by ? ` by ${escapeHtml(p.by)}` : ""
        } (${p.source})</span>${escapeHtml(p.text)}</div>\n`;
      case "assistant":
        return (p.thinking
          ? `<details><summary>Thinking</summary><pre>${escapeHtml(p.thinking)}</pre></details>\n`
          : "") +
          (p.text ? `<div class="msg assistant md">${renderMarkdown(p.text)}</div>\n` : "") +
          (p.error ? `<div class="msg error">${escapeHtml(p.error)}</div>\n` : "");
      case "call":
        return `<pre class="call"><b>${escapeHtml(p.tool)}</b>\n${escapeHtml(p.args)}</pre>\n`;
      case "output":
        return `<details class="output"><summary>${p.isError ? "Error from" : "Output of"} ${
          escapeHtml(p.tool)
        }</summary><pre>${escapeHtml(p.text)}</pre></details>\n`;
      case "run_end":
        return `<p class="run-end">Run ended: ${p.input} input and ${p.output} output tokens, $${
          p.cost.toFixed(4)
        }.</p>\n`;
    }
  }

  end(): string {
    return "</body></html>\n";
  }
}
