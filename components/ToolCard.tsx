/** A tool call as a card: name, a one-line summary of its arguments, status, and (unfolded) args and result. */
import type { ToolCall } from "../ui/conversation.ts";
import { ToolBody } from "./ToolBody.tsx";

/** The argument a person looks for first, per well-known tool; the first short string for any other tool. */
function summary(call: ToolCall): string {
  let args: Record<string, unknown> = {};
  try {
    const v = JSON.parse(call.argsJson || "{}");
    if (v && typeof v === "object") args = v;
  } catch {
    return call.argsJson.slice(0, 120);
  }
  const pick = (...keys: string[]) =>
    keys.map((k) => args[k]).find((v) => typeof v === "string") as string | undefined;
  const known: Record<string, () => string | undefined> = {
    bash: () => pick("command"),
    read: () => pick("path", "file_path"),
    write: () => pick("path", "file_path"),
    edit: () => pick("path", "file_path"),
    grep: () => pick("pattern"),
    find: () => pick("pattern", "path"),
    ls: () => pick("path"),
    todo: () =>
      [args.action, args.text ?? (args.id !== undefined ? `#${args.id}` : "")].filter(Boolean).join(" "),
    subagent: () =>
      pick("agent", "task") ?? (Array.isArray(args.tasks) ? `${args.tasks.length} tasks` : "chain"),
  };
  const found = known[call.name]?.() ??
    Object.values(args).find((v) => typeof v === "string") as string | undefined;
  return (found ?? "").split("\n")[0].slice(0, 160);
}

const STATUS_LABEL: Record<ToolCall["status"], string> = {
  pending: "queued",
  awaiting: "awaiting approval",
  running: "running",
  done: "done",
  error: "error",
  rejected: "rejected",
  stopped: "stopped",
};

export function ToolCard({ call }: { call: ToolCall }) {
  // Edits and writes open by themselves: their diff or content is what a person reads the card for.
  const open = call.status === "error" || call.name === "edit" || call.name === "write";
  return (
    <details class={`tool tool-${call.status}`} data-tool={call.name} open={open}>
      <summary>
        <span class="tool-name">{call.name || "tool"}</span>
        <code class="tool-summary">{summary(call)}</code>
        <span class={`chip ${call.status}`}>{STATUS_LABEL[call.status]}</span>
      </summary>
      <ToolBody call={call} />
    </details>
  );
}
