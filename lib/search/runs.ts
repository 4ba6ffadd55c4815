/**
 * A session's history as runs: one per `agent_start` … `agent_end`, with its prompt (who sent it and from
 * where), how it ended, its tokens and cost, the tools it called and the approvals it asked for. Derived from
 * the event log alone, page by page, so it is the same after a restart and for a session of any length.
 */
import type { EventRow } from "../event_codec.ts";
import type { RunSource, RunSummary } from "../protocol/search.ts";

/** Characters of a run's prompt kept in its summary. */
export const RUN_PROMPT_CHARS = 500;
/** Types a run summary reads; the rest of the log is skipped without parsing. */
const READ = new Set([
  "agent_start",
  "agent_end",
  "message_end",
  "tool_execution_start",
  "approval_request",
  "approval_resolved",
  "bye",
]);

type Prompt = NonNullable<RunSummary["prompt"]>;

/** Where a prompt came from, by what the daemon put on its message (`from`). */
export function promptSource(
  from: { promptId?: string; by?: string; source?: string } | undefined,
): RunSource {
  if (from?.by?.startsWith("hook:")) return "hook";
  // Every prompt the daemon delivered carries its id; lvmh's CLI says so (a plugin before that said nothing).
  if (from?.promptId) return from.source === "cli" ? "cli" : "web";
  return "terminal";
}

/** Builds runs from a session's events in seq order (feed pages one after the other). */
export class RunsBuilder {
  readonly runs: RunSummary[] = [];
  #current: RunSummary | null = null;
  /** A user message before the next agent_start: pi emits a prompt's message inside its run, but not always. */
  #waiting: Prompt | null = null;
  #lastStop: { reason: string; error?: string } | null = null;

  /** Take the next events (seq ascending). */
  add(rows: Iterable<EventRow>): void {
    for (const row of rows) {
      if (!READ.has(row.type)) continue;
      this.#one(row, JSON.parse(row.payload));
    }
  }

  #one(row: EventRow, p: Record<string, unknown>): void {
    const run = this.#current;
    switch (row.type) {
      case "agent_start": {
        if (run) this.#close(run, row.seq, row.ts, "aborted");
        this.#current = {
          runId: `run-${row.seq}`,
          startSeq: row.seq,
          endSeq: null,
          startedAt: row.ts,
          endedAt: null,
          prompt: this.#waiting,
          state: "running",
          usage: { inputTokens: 0, outputTokens: 0, totalCost: 0 },
          tools: {},
          approvals: { asked: 0, rejected: 0 },
        };
        this.#waiting = null;
        this.#lastStop = null;
        this.runs.push(this.#current);
        return;
      }
      case "message_end": {
        const m = p.message as Record<string, unknown> | undefined;
        if (m?.role === "user") {
          const from = p.from as { promptId?: string; by?: string; source?: string } | undefined;
          const prompt: Prompt = {
            text: String(m.text ?? "").slice(0, RUN_PROMPT_CHARS),
            by: from?.by ?? null,
            source: promptSource(from),
          };
          if (run && !run.prompt) run.prompt = prompt;
          else if (!run) this.#waiting = prompt;
        } else if (m?.role === "assistant" && run) {
          const reason = typeof m.stopReason === "string" ? m.stopReason : "";
          this.#lastStop = { reason, error: typeof m.errorMessage === "string" ? m.errorMessage : undefined };
        }
        return;
      }
      case "tool_execution_start": {
        if (!run) return;
        const name = String(p.toolName ?? "?");
        run.tools[name] = (run.tools[name] ?? 0) + 1;
        return;
      }
      case "approval_request":
        if (run) run.approvals.asked++;
        return;
      case "approval_resolved":
        if (run && p.decision === "reject") run.approvals.rejected++;
        return;
      case "agent_end": {
        if (!run) return;
        const usage = (p.usage ?? {}) as Record<string, unknown>;
        run.usage = {
          inputTokens: Number(usage.inputTokens) || 0,
          outputTokens: Number(usage.outputTokens) || 0,
          totalCost: Number(usage.totalCost) || 0,
        };
        const stop = this.#lastStop;
        if (stop?.reason === "aborted") this.#close(run, row.seq, row.ts, "aborted");
        else if (stop?.reason === "error") this.#close(run, row.seq, row.ts, "failed", stop.error);
        else this.#close(run, row.seq, row.ts, "done");
        return;
      }
      case "bye":
        // pi went away mid-run: that run ended there, unfinished.
        if (run) this.#close(run, row.seq, row.ts, "aborted");
        return;
    }
  }

  #close(run: RunSummary, seq: number, ts: number, state: RunSummary["state"], error?: string): void {
    run.endSeq = seq;
    run.endedAt = ts;
    run.state = state;
    if (error) run.error = error;
    this.#current = null;
  }
}

/**
 * Every run of a session, newest first.
 * @param pages reads the session's events after a seq, seq ascending (`store.eventRows`)
 * @param options.before only runs starting below this seq; `limit` at most this many
 */
export function sessionRuns(
  pages: (after: number) => EventRow[],
  options: { before?: number; limit: number },
): RunSummary[] {
  const builder = new RunsBuilder();
  let after = 0;
  for (;;) {
    const rows = pages(after);
    if (!rows.length) break;
    builder.add(options.before === undefined ? rows : rows.filter((r) => r.seq < options.before!));
    after = rows[rows.length - 1].seq;
    if (options.before !== undefined && after >= options.before) break;
  }
  return builder.runs.reverse().slice(0, options.limit);
}
