/**
 * A session read as its runs (`GET /api/sessions/:id/runs`): one line each, newest first, with its prompt and
 * who sent it, how it ended, its tokens and cost, the tools it called and the approvals it asked for, and a
 * sparkline of tokens per run. A run opens the conversation at its start (`?at=`). `ExportLinks` downloads the
 * session as Markdown, JSONL or HTML.
 */
import { useEffect, useState } from "preact/hooks";
import type { RunSummary } from "../lib/protocol.ts";
import { errorText } from "../ui/api.ts";
import { exportUrl, sessionRuns } from "../ui/rest.ts";
import { formatCost, formatTokens, relativeTime } from "../ui/format.ts";
import { hitHref } from "../ui/snippet.ts";

const STATE_TEXT: Record<RunSummary["state"], string> = {
  running: "running",
  done: "done",
  failed: "failed",
  aborted: "aborted",
};

/** Tokens per run, oldest to newest, as an SVG polyline (no script, no markup from the runs). */
export function Sparkline({ values }: { values: number[] }) {
  if (values.length < 2) return null;
  const max = Math.max(1, ...values);
  const w = 160;
  const h = 28;
  const points = values.map((v, i) =>
    `${(i * w / (values.length - 1)).toFixed(1)},${(h - 2 - v * (h - 4) / max).toFixed(1)}`
  );
  return (
    <svg
      class="sparkline"
      viewBox={`0 0 ${w} ${h}`}
      width={w}
      height={h}
      role="img"
      aria-label="tokens per run"
    >
      <polyline points={points.join(" ")} fill="none" stroke="currentColor" stroke-width="1.5" />
    </svg>
  );
}

/** Export links of a session: each downloads a file named after its title. */
export function ExportLinks({ sessionId }: { sessionId: string }) {
  return (
    <p class="small export-links" data-export>
      Export: <a href={exportUrl(sessionId, "md")} download>Markdown</a> ·{" "}
      <a href={exportUrl(sessionId, "html")} download>HTML</a> ·{" "}
      <a href={exportUrl(sessionId, "jsonl")} download>JSONL</a>
    </p>
  );
}

export function RunsView(
  { sessionId, now, refreshKey }: { sessionId: string; now: number; refreshKey: number },
) {
  const [runs, setRuns] = useState<RunSummary[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    sessionRuns(sessionId)
      .then((r) => live && (setRuns(r), setError(null)))
      .catch((e) => live && setError(errorText(e)));
    return () => {
      live = false;
    };
  }, [sessionId, refreshKey]);

  return (
    <main class="runs-view" data-runs-loaded={runs ? "1" : undefined}>
      <div class="runs-head">
        <h2>Runs</h2>
        {runs && (
          <Sparkline values={[...runs].reverse().map((r) => r.usage.inputTokens + r.usage.outputTokens)} />
        )}
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      {runs && runs.length === 0 && <p class="muted">No run yet.</p>}
      {runs && runs.length > 0 && (
        <table class="runs">
          <thead>
            <tr>
              <th>When</th>
              <th>Prompt</th>
              <th>State</th>
              <th>Tokens</th>
              <th>Cost</th>
              <th>Tools</th>
              <th>Approvals</th>
            </tr>
          </thead>
          <tbody>
            {runs.map((r) => (
              <tr key={r.runId} data-run={r.startSeq} class={`run ${r.state}`}>
                <td class="nowrap">
                  <a href={hitHref(sessionId, r.startSeq)}>{relativeTime(r.startedAt, now)}</a>
                </td>
                <td class="prompt">
                  <a href={hitHref(sessionId, r.startSeq)}>
                    {r.prompt?.text.split("\n")[0] || "(no prompt)"}
                  </a>
                  {r.prompt && (
                    <span class="muted small">
                      {` — ${r.prompt.by ? `${r.prompt.by}, ` : ""}`}
                      {r.prompt.source}
                    </span>
                  )}
                  {r.error && <span class="small error">{r.error}</span>}
                </td>
                <td data-state={r.state}>{STATE_TEXT[r.state]}</td>
                <td class="nowrap">
                  {formatTokens(r.usage.inputTokens)} / {formatTokens(r.usage.outputTokens)}
                </td>
                <td>{formatCost(r.usage.totalCost)}</td>
                <td class="small">
                  {Object.entries(r.tools).map(([name, n]) => `${name} ×${n}`).join(", ")}
                </td>
                <td class="small">
                  {r.approvals.asked ? `${r.approvals.asked} asked, ${r.approvals.rejected} rejected` : ""}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </main>
  );
}
