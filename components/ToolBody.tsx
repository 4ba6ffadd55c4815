/**
 * The unfolded body of a tool card, by tool (`ui/tool_view.ts`): an edit's unified diff, a written file
 * with its path, a command with its output, a read with its path and lines; code highlighted by its file's
 * language. Highlighted HTML comes only from `ui/highlight.ts`, which escapes the text it wraps.
 */
import type { ToolCall } from "../ui/conversation.ts";
import { prettyJson } from "../ui/format.ts";
import { highlight, languageOfPath } from "../ui/highlight.ts";
import { outputOf, toolView } from "../ui/tool_view.ts";

function Code({ text, lang, cls }: { text: string; lang: string | null; cls: string }) {
  return (
    <pre class={`${cls} code`}>
      <code data-hl={lang ?? ""} dangerouslySetInnerHTML={{ __html: highlight(text, lang ?? "") }} />
    </pre>
  );
}

function Output({ call, text, lang = null }: { call: ToolCall; text: string; lang?: string | null }) {
  if (!text) return null;
  const label = call.status === "error" ? "Error" : call.resultText !== null ? "Result" : "Output";
  return (
    <>
      <div class="label">{label}</div>
      {lang && call.status !== "error"
        ? <Code text={text} lang={lang} cls="result" />
        : <pre class="result">{text}</pre>}
    </>
  );
}

export function ToolBody({ call }: { call: ToolCall }) {
  const v = toolView(call);
  switch (v.kind) {
    case "bash":
      return (
        <div class="tool-body">
          <Code text={v.command} lang="bash" cls="command" />
          <Output call={call} text={v.output} />
        </div>
      );
    case "write":
      return (
        <div class="tool-body">
          <div class="path mono wrap">{v.path}</div>
          <Code text={v.content} lang={languageOfPath(v.path)} cls="content" />
          <Output call={call} text={outputOf(call)} />
        </div>
      );
    case "read":
      return (
        <div class="tool-body">
          <div class="path mono wrap">
            {v.path}
            {v.lines && <span class="muted small read-lines">{` · ${v.lines}`}</span>}
          </div>
          <Output call={call} text={v.output} lang={languageOfPath(v.path)} />
        </div>
      );
    case "edit":
      return (
        <div class="tool-body">
          <div class="path mono wrap">{v.path}</div>
          {v.hunks.map((h, i) => (
            <pre key={i} class="diff unified">
              {h.header && <span class="diff-line hunk">{h.header}</span>}
              {h.rows.map((l, j) => (
                <span key={j} class={`diff-line ${l.op === "+" ? "add" : l.op === "-" ? "del" : "same"}`}>
                  {h.header && <span class="ln" aria-hidden="true">{l.oldNo ?? ""}</span>}
                  {h.header && <span class="ln" aria-hidden="true">{l.newNo ?? ""}</span>}
                  <span class="op">{l.op}</span> {l.text}
                </span>
              ))}
            </pre>
          ))}
          <Output call={call} text={outputOf(call)} />
        </div>
      );
    case "generic":
      return (
        <div class="tool-body">
          <div class="label">Arguments</div>
          <pre class="args">{prettyJson(call.argsJson || "{}")}</pre>
          <Output call={call} text={outputOf(call)} />
        </div>
      );
  }
}
