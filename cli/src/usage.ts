/** `lvmh usage [--by day|session|repo|person|model] [--since 7d] [--json]`: what the agents cost. */
import process from "node:process";
import type { UsageRow } from "../../lib/usage.ts";
import { parse } from "./args.ts";
import type { Command } from "./command.ts";
import { api } from "./http.ts";
import { CliError } from "./errors.ts";
import { printJsonLines, printTable } from "./output.ts";

const BY = ["day", "session", "repo", "person", "model"];
const DAY_MS = 86_400_000;

export const usage: Command = async (cfg, args) => {
  const { values } = parse(args, {
    by: { type: "string" },
    since: { type: "string" },
    json: { type: "boolean" },
  });
  const by = values.by ?? "day";
  if (!BY.includes(by)) throw new CliError(2, `--by must be one of ${BY.join(", ")}`);
  const since = /^([1-9][0-9]{0,2})d$/.exec(values.since ?? "30d");
  if (!since || Number(since[1]) > 366) throw new CliError(2, "--since must be a number of days, 1d to 366d");
  const today = new Date().toISOString().slice(0, 10);
  const from = new Date(Date.parse(`${today}T00:00:00Z`) - (Number(since[1]) - 1) * DAY_MS).toISOString()
    .slice(0, 10);
  const rows = await api<UsageRow[]>(
    cfg,
    "GET",
    `/api/usage?${new URLSearchParams({ by, from, to: today })}`,
  );
  if (values.json) return printJsonLines(rows);
  if (!rows.length) return void process.stdout.write("no runs\n");
  printTable(
    [by.toUpperCase(), "RUNS", "INPUT", "OUTPUT", "COST"],
    rows.map((r) => [r.key, r.runs, r.inputTokens, r.outputTokens, `$${r.cost.toFixed(4)}`]),
  );
  const total = rows.reduce((t, r) => t + r.cost, 0);
  process.stdout.write(`total $${total.toFixed(2)} since ${from}\n`);
};
