/** The session page's side column: session facts, usage, todos and subagent runs derived from tool calls. */
import type { SessionSummary } from "../lib/protocol.ts";
import type { Conversation } from "../ui/conversation.ts";
import type { SubagentRun, TodoState } from "../ui/derive.ts";
import { formatCost, formatTokens, relativeTime } from "../ui/format.ts";

export function SessionFacts({ s, now }: { s: SessionSummary; now: number }) {
  return (
    <section class="panel facts" aria-label="Session">
      <dl>
        <dt>Where</dt>
        <dd class="wrap">{s.repo ?? (s.cwd || "?")}</dd>
        {s.repo && s.cwd && (
          <>
            <dt>cwd</dt>
            <dd class="wrap">{s.cwd}</dd>
          </>
        )}
        <dt>Model</dt>
        <dd>{s.model ?? "?"}{s.provider ? ` · ${s.provider}` : ""}</dd>
        <dt>Kind</dt>
        <dd>
          <span class={`badge ${s.agent ? "container" : "local"}`}>{s.agent ? "container" : "local"}</span>
        </dd>
        <dt>Started</dt>
        <dd>{relativeTime(s.startedAt, now)}</dd>
        <dt>Id</dt>
        <dd class="wrap mono">{s.id}</dd>
      </dl>
    </section>
  );
}

export function UsagePanel({ conv }: { conv: Conversation }) {
  const runs = conv.items.filter((i) => i.kind === "run").length;
  const t = conv.totals;
  return (
    <section class="panel usage" aria-label="Usage">
      <h2>Usage</h2>
      <div class="stats">
        <div>
          <b>{formatTokens(t.inputTokens)}</b>
          <span>input</span>
        </div>
        <div>
          <b>{formatTokens(t.outputTokens)}</b>
          <span>output</span>
        </div>
        <div>
          <b>{formatCost(t.totalCost)}</b>
          <span>cost</span>
        </div>
      </div>
      <p class="muted small">{runs} run{runs === 1 ? "" : "s"} in the loaded history</p>
    </section>
  );
}

export function TodoPanel({ state }: { state: TodoState }) {
  const done = state.todos.filter((t) => t.done).length;
  return (
    <section class="panel todos" aria-label="Todos">
      <h2>
        Todos {state.todos.length > 0 && <span class="count">{done}/{state.todos.length}</span>}
      </h2>
      {state.todos.length === 0
        ? <p class="muted small">{state.seq ? "The list is empty." : "No todo list in this session."}</p>
        : (
          <ul>
            {state.todos.map((t) => (
              <li key={t.id} class={t.done ? "done" : ""}>
                <span class="check" aria-label={t.done ? "done" : "open"}>{t.done ? "✓" : "○"}</span>
                <span class="id">#{t.id}</span> {t.text}
              </li>
            ))}
          </ul>
        )}
    </section>
  );
}

export function SubagentPanel({ runs }: { runs: SubagentRun[] }) {
  if (runs.length === 0) return null;
  return (
    <section class="panel subagents" aria-label="Subagents">
      <h2>
        Subagents <span class="count">{runs.length}</span>
      </h2>
      <ul>
        {runs.map((r) => (
          <li key={r.id}>
            <details>
              <summary>
                <span class={`chip ${r.status}`}>{r.status}</span> <span class="mode">{r.mode}</span>{" "}
                {r.tasks.map((t) => t.agent).join(r.mode === "chain" ? " → " : ", ")}
              </summary>
              {r.tasks.map((t, i) => (
                <p key={i} class="small">
                  <b>{t.agent}</b>: {t.task}
                </p>
              ))}
              {r.output && <pre class="result">{r.output}</pre>}
            </details>
          </li>
        ))}
      </ul>
    </section>
  );
}
