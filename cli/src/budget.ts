/** `lvmh budget ID [--cost D] [--tokens N] [--on ask|stop] [--clear] [--json]`: a session's spending limit. */
import process from "node:process";
import type { BudgetView } from "../../lib/protocol.ts";
import { need, parse } from "./args.ts";
import type { Command } from "./command.ts";
import { api, enc } from "./http.ts";
import { usage } from "./errors.ts";

export const budget: Command = async (cfg, args) => {
  const { values, positionals } = parse(args, {
    cost: { type: "string" },
    tokens: { type: "string" },
    on: { type: "string" },
    clear: { type: "boolean" },
    json: { type: "boolean" },
  });
  const [id] = need(positionals, 1, "a session ID");
  const path = `/api/sessions/${enc(id)}/budget`;
  const cost = values.cost === undefined ? undefined : Number(values.cost);
  if (cost !== undefined && !(Number.isFinite(cost) && cost > 0)) {
    throw usage("--cost must be a number of dollars above 0");
  }
  const tokens = values.tokens === undefined ? undefined : Number(values.tokens);
  if (tokens !== undefined && !(Number.isSafeInteger(tokens) && tokens > 0)) {
    throw usage("--tokens must be a whole number above 0");
  }
  if (values.on !== undefined && values.on !== "ask" && values.on !== "stop") {
    throw usage("--on must be ask or stop");
  }
  const changes = cost !== undefined || tokens !== undefined || values.on !== undefined;
  if (values.clear && changes) throw usage("--clear removes the budget: give it alone");
  let view: BudgetView;
  if (values.clear) view = await api<BudgetView>(cfg, "PUT", path, {});
  else if (changes) {
    // What is not given stays as in force now (limits raised by approvals included).
    const now = (await api<BudgetView>(cfg, "GET", path)).budget;
    const body = {
      maxCost: cost ?? now?.current.maxCost,
      maxTokens: tokens ?? now?.current.maxTokens,
      onReach: values.on ?? now?.onReach ?? "ask",
    };
    if (body.maxCost === undefined && body.maxTokens === undefined) {
      throw usage("the session has no budget: give --cost and/or --tokens");
    }
    view = await api<BudgetView>(cfg, "PUT", path, body);
  } else view = await api<BudgetView>(cfg, "GET", path);
  if (values.json) return void process.stdout.write(JSON.stringify(view) + "\n");
  process.stdout.write(describe(view) + "\n");
};

/** "budget $1.20 of $5.00, 3,000 of 100,000 tokens; then ask (set on the session)". */
export function describe(view: BudgetView): string {
  const lines: string[] = [];
  const b = view.budget;
  const spent = `$${view.spent.cost.toFixed(2)}, ${
    Math.round(view.spent.tokens).toLocaleString("en")
  } tokens`;
  if (!b) lines.push(`no budget; spent ${spent}`);
  else {
    const parts: string[] = [];
    if (b.current.maxCost !== undefined) {
      parts.push(`$${view.spent.cost.toFixed(2)} of $${b.current.maxCost.toFixed(2)}`);
    }
    if (b.current.maxTokens !== undefined) {
      parts.push(
        `${Math.round(view.spent.tokens).toLocaleString("en")} of ${
          b.current.maxTokens.toLocaleString("en")
        } tokens`,
      );
    }
    const from = b.source === "session" ? "set on the session" : `the ${b.source} default`;
    lines.push(`budget ${parts.join(", ")}; then ${b.onReach} (${from})`);
  }
  if (view.daily) {
    const d = view.daily;
    const limits = [
      d.maxCost !== undefined ? `$${d.spent.cost.toFixed(2)} of $${d.maxCost.toFixed(2)}` : "",
      d.maxTokens !== undefined
        ? `${d.spent.tokens.toLocaleString("en")} of ${d.maxTokens.toLocaleString("en")} tokens`
        : "",
    ].filter(Boolean);
    lines.push(`daily cap ${limits.join(", ")} today (UTC)`);
  }
  if (view.reached) lines.push(`prompts refused: ${view.reached}`);
  return lines.join("\n");
}
