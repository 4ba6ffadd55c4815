/** A waiting call's arguments, readable: a command, a file's content with its path, or an edit's diff. */
import { prettyArgs } from "../ui/approval_view.ts";

export function ApprovalArgs({ toolName, args }: { toolName: string; args: unknown }) {
  const p = prettyArgs(toolName, args);
  switch (p.kind) {
    case "command":
      return (
        <div class="approval-args">
          {p.cwd && <div class="muted small">in {p.cwd}</div>}
          <pre class="command">{p.command}</pre>
        </div>
      );
    case "write":
      return (
        <div class="approval-args">
          <div class="path mono wrap">{p.path}</div>
          <pre class="content">{p.content}</pre>
        </div>
      );
    case "edit":
      return (
        <div class="approval-args">
          <div class="path mono wrap">{p.path}</div>
          {p.hunks.map((hunk, i) => (
            <pre key={i} class="diff">
              {hunk.map((l, j) => (
                <span key={j} class={`diff-line ${l.op === "+" ? "add" : l.op === "-" ? "del" : "same"}`}>
                  {l.op} {l.text}
                </span>
              ))}
            </pre>
          ))}
        </div>
      );
    case "json":
      return (
        <div class="approval-args">
          <pre class="args">{p.text}</pre>
        </div>
      );
  }
}
