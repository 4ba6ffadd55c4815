/**
 * `/usage` (viewer): what the agents cost. Cost and tokens per day as stacked bars (by repository or model,
 * `?stack=model`), the top sessions and repositories, and the budgets in force. Rendered on the server from
 * the event log (lib/usage.ts); `?days=7` (1–366) picks the range, ending today (UTC).
 */
import type { Ctx } from "../lib/router.ts";
import { page } from "./_page.tsx";
import { groupRuns, type UsageRow } from "../lib/usage.ts";
import { utcDay } from "../lib/budget_math.ts";
import { UsageChart } from "../components/UsageChart.tsx";
import { budgetText, budgetTone, limitText } from "../components/BudgetBar.tsx";
import { formatCost, formatTokens } from "../ui/format.ts";

const DAY_MS = 86_400_000;

function Table({ rows, label, link }: { rows: UsageRow[]; label: string; link?: (key: string) => string }) {
  return (
    <table class="usage-table" data-table={label}>
      <thead>
        <tr>
          <th>{label}</th>
          <th>runs</th>
          <th>tokens</th>
          <th>cost</th>
        </tr>
      </thead>
      <tbody>
        {rows.length === 0 && (
          <tr>
            <td colSpan={4} class="muted">No runs in this range.</td>
          </tr>
        )}
        {rows.map((r) => (
          <tr key={r.key}>
            <td class="key">{link ? <a href={link(r.key)}>{r.key}</a> : r.key}</td>
            <td>{r.runs}</td>
            <td>{formatTokens(r.inputTokens + r.outputTokens)}</td>
            <td>{formatCost(r.cost)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export const handler = {
  GET(ctx: Ctx): Response {
    return page(ctx, { what: "Usage" }, () => {
      const q = ctx.url.searchParams;
      const days = Math.min(366, Math.max(1, Math.trunc(Number(q.get("days") ?? 30)) || 30));
      const stack = q.get("stack") === "model" ? "model" : "repo";
      const end = Date.parse(`${utcDay(Date.now())}T00:00:00Z`) + DAY_MS;
      const from = end - days * DAY_MS;
      const dayList = Array.from({ length: days }, (_, i) => utcDay(from + i * DAY_MS));
      const sessions = ctx.app.store.listSessions();
      const runs = ctx.app.usage.runs(sessions, from, end);
      const names = new Map(sessions.map((s) => [s.id, s.name ?? s.repo ?? s.id]));
      const bySession = groupRuns(runs, "session").slice(0, 10).map((r) => ({ ...r, key: r.key }));
      const budgets = ctx.app.budgets.inForce();
      const total = groupRuns(runs, "day").reduce(
        (t, r) => ({
          cost: t.cost + r.cost,
          tokens: t.tokens + r.inputTokens + r.outputTokens,
          runs: t.runs + r.runs,
        }),
        { cost: 0, tokens: 0, runs: 0 },
      );
      const daily = budgets.defaults.dailyBudget;
      return {
        title: "Usage",
        bodyClass: "page-usage",
        body: (
          <div class="usage-page">
            <nav class="usage-range" aria-label="Range">
              {[7, 30, 90].map((d) => (
                <a key={d} href={`/usage?days=${d}&stack=${stack}`} class={d === days ? "on" : ""}>
                  {d} days
                </a>
              ))}
              <span class="sep">·</span>
              {(["repo", "model"] as const).map((s) => (
                <a key={s} href={`/usage?days=${days}&stack=${s}`} class={s === stack ? "on" : ""}>
                  by {s}
                </a>
              ))}
            </nav>
            <p class="usage-total" data-usage-total>
              <b>{formatCost(total.cost)}</b> · {formatTokens(total.tokens)} tokens · {total.runs}{" "}
              run{total.runs === 1 ? "" : "s"} in the last {days} days
            </p>
            <h2>Cost per day</h2>
            <UsageChart runs={runs} days={dayList} stack={stack} measure="cost" />
            <h2>Tokens per day</h2>
            <UsageChart runs={runs} days={dayList} stack={stack} measure="tokens" />
            <div class="usage-tables">
              <section>
                <h2>Top sessions</h2>
                <Table
                  rows={bySession.map((r) => ({ ...r, key: names.get(r.key) ?? r.key }))}
                  label="session"
                />
              </section>
              <section>
                <h2>Top repositories</h2>
                <Table rows={groupRuns(runs, "repo").slice(0, 10)} label="repo" />
              </section>
              <section>
                <h2>By person</h2>
                <Table rows={groupRuns(runs, "person").slice(0, 10)} label="person" />
              </section>
            </div>
            <h2>Budgets in force</h2>
            <ul class="budgets-in-force" data-budgets>
              {daily && (
                <li data-budget-daily>
                  Daily cap (every session, UTC day):{" "}
                  {budgetText({ spent: budgets.today, limits: daily, onReach: "stop", used: 0 })}
                </li>
              )}
              {budgets.defaults.spawnBudget && (
                <li>
                  Spawned sessions: {limitText(budgets.defaults.spawnBudget)}, then{" "}
                  {budgets.defaults.spawnBudget.onReach}
                </li>
              )}
              {budgets.defaults.localBudget && (
                <li>
                  Terminal sessions: {limitText(budgets.defaults.localBudget)}, then{" "}
                  {budgets.defaults.localBudget.onReach}
                </li>
              )}
              {budgets.sessions.map(({ sessionId, glance }) => (
                <li key={sessionId} data-budget-session={sessionId} class={`tone-${budgetTone(glance.used)}`}>
                  <a href={`/sessions/${encodeURIComponent(sessionId)}`}>
                    {names.get(sessionId) ?? sessionId}
                  </a>
                  : {budgetText(glance)} ({glance.onReach})
                </li>
              ))}
              {!daily && !budgets.defaults.spawnBudget && !budgets.defaults.localBudget &&
                budgets.sessions.length === 0 && <li class="muted">No budget is set.</li>}
            </ul>
          </div>
        ),
      };
    });
  },
};
