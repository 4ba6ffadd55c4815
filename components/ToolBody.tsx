/**
 * The unfolded body of a tool card, by tool (`ui/tool_view.ts`): an edit's unified diff, a write's own change
 * as a diff against the file's earlier content in this conversation (`ui/write_diff.ts`; the file whole when
 * none is known), a command with its output, a read with its path and lines; code highlighted by its file's
 * language. Highlighted HTML comes only from `ui/highlight.ts`, which escapes the text it wraps.
 */
import { useContext, useMemo } from "preact/hooks";
import type { ToolCall } from "../ui/conversation.ts";
import { prettyJson } from "../ui/format.ts";
import { highlight, languageOfPath } from "../ui/highlight.ts";
import { type DiffRow, outputOf, toolView } from "../ui/tool_view.ts";
import { WriteBasesContext, writeHunks } from "../ui/write_diff.ts";

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

/** Unified diff hunks, with both sides' line numbers when the hunk has a header. */
function Hunks({ hunks }: { hunks: { header: string | null; rows: DiffRow[] }[] }) {
  return (
    <>
      {hunks.map((h, i) => (
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
    </>
  );
}

/** A write as the change it made: against the content the conversation last showed, else the file whole. */
function WriteDiff({ call, path, content }: { call: ToolCall; path: string; content: string }) {
  const base = useContext(WriteBasesContext).get(call.id) ?? null;
  const hunks = useMemo(() => writeHunks(base, content), [base, content]);
  return (
    <div class="tool-body" data-write={base === null ? "whole" : "diff"}>
      <div class="path mono wrap">{path}</div>
      <p class="muted small write-basis">
        {base === null
          ? "New file, or no earlier content of it in this conversation: shown whole."
          : hunks.length === 0
          ? "Same content as this conversation last showed."
          : "The change since this conversation last showed the file."}
      </p>
      <Hunks hunks={hunks} />
      <Output call={call} text={outputOf(call)} />
    </div>
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
      return <WriteDiff call={call} path={v.path} content={v.content} />;
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
          <Hunks hunks={v.hunks} />
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
