/**
 * The conversation for a terminal: one line per message, tool call, approval and run end, with streamed text
 * printed as it arrives. The switch is over the protocol's one event union, exhaustively: a new event type
 * fails the type check here until the CLI decides how to show it.
 */
import type { AgentEvent } from "../../lib/protocol.ts";
import { short } from "./output.ts";

/** An event as the daemon delivers it (REST pages and the SSE stream): what it parsed with `AgentEvent`. */
export type CliEvent = AgentEvent;

/** Renders events through `write`; keeps track of streamed text so a message is never printed twice. */
export function createRenderer(
  write: (text: string) => void,
): (e: CliEvent) => void {
  let streamed: string | null = null;
  const endStream = () => {
    if (streamed !== null) write("\n");
    streamed = null;
  };
  // The `??` fallbacks cover a daemon of another version that leaves a field out.
  return function render(e: CliEvent): void {
    switch (e.type) {
      case "message_update": {
        if (e.kind === "thinking") return;
        if (streamed === null) {
          write("assistant: ");
          streamed = "";
        }
        streamed += e.delta ?? "";
        write(e.delta ?? "");
        return;
      }
      case "message_end": {
        const m: Partial<typeof e.message> = e.message ?? {};
        const text = m.text ?? "";
        if (
          m.role === "assistant" && streamed !== null &&
          text.startsWith(streamed)
        ) {
          write(text.slice(streamed.length) + "\n");
          streamed = null;
          return;
        }
        endStream();
        if (m.role === "toolResult") return; // shown by tool_execution_end
        if (text) write(`${m.role}: ${text}\n`);
        return;
      }
      case "tool_execution_start":
        endStream();
        write(`  > ${e.toolName} ${short(JSON.stringify(e.args ?? {}))}\n`);
        return;
      case "tool_execution_end":
        endStream();
        write(
          `  ${e.isError ? "x" : "ok"} ${e.toolName}${e.isError ? `: ${short(e.resultPreview)}` : ""}\n`,
        );
        return;
      case "approval_request":
        endStream();
        write(
          `  ? ${e.toolName} waits for approval: lvmh approve ${e.approvalId}\n`,
        );
        return;
      case "approval_resolved":
        write(
          `  ${e.decision === "approve" ? "approved" : "rejected"} by ${e.by ?? "?"} (${e.source ?? ""})\n`,
        );
        return;
      case "agent_end": {
        endStream();
        const u: Partial<typeof e.usage> = e.usage ?? {};
        const tokens = u.inputTokens !== undefined
          ? ` (${u.inputTokens} in, ${u.outputTokens ?? 0} out)`
          : "";
        write(`-- run ended${tokens} --\n`);
        return;
      }
      case "bye":
        endStream();
        write(`-- session ended: ${e.reason ?? ""} --\n`);
        return;
      case "buffer_overflow":
        write(`!! the plugin lost ${e.dropped} events\n`);
        return;
      case "session_notice":
        endStream();
        write(`!! ${e.text}\n`);
        return;
      // Not shown: the message's text comes with message_end, tool output with tool_execution_end, a run's
      // start and settling add nothing to its end, and the snapshot and command answers are the list's.
      case "message_start":
      case "tool_execution_update":
      case "agent_start":
      case "agent_settled":
      case "session_info":
      case "command_result":
        return;
      default: {
        // Exhaustive: a new event type in lib/protocol.ts fails the type check here until it is handled. At
        // run time a newer daemon's unknown type lands here and is skipped.
        const never: never = e;
        return never;
      }
    }
  };
}
