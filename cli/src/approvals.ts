/** `lvmh approvals`, `approve` and `reject`: the tool calls waiting for a person, and the answer to one. */
import process from "node:process";
import type { Approval, ApprovalDecision, DecisionBody } from "../../lib/protocol.ts";
import { need, parse } from "./args.ts";
import type { Command } from "./command.ts";
import { api, enc } from "./http.ts";
import { ago, printJsonLines, printTable, short } from "./output.ts";

export const approvals: Command = async (cfg, args) => {
  const { values, positionals } = parse(args, { json: { type: "boolean" } });
  need(positionals, 0, "no arguments");
  const list = await api<Approval[]>(
    cfg,
    "GET",
    "/api/approvals?state=pending",
  );
  if (values.json) return printJsonLines(list);
  printTable(
    ["ID", "SESSION", "TOOL", "WAITING SINCE", "ARGS"],
    list.map((
      a,
    ) => [
      a.id,
      a.sessionId,
      a.toolName,
      ago(a.createdAt),
      short(JSON.stringify(a.args), 80),
    ]),
  );
};

/** `approve` and `reject`: the first answer wins; prints the approval's state after it. */
const decide = (decision: ApprovalDecision): Command => async (cfg, args) => {
  const { values, positionals } = parse(args, {
    reason: { type: "string" },
    json: { type: "boolean" },
  });
  const [id] = need(positionals, 1, "an approval id");
  const body: DecisionBody = { decision };
  if (values.reason) body.reason = values.reason;
  const res = await api<Approval>(
    cfg,
    "POST",
    `/api/approvals/${enc(id)}`,
    body,
  );
  process.stdout.write(
    values.json ? JSON.stringify(res) + "\n" : `${res.state ?? decision}\n`,
  );
};

export const approve: Command = decide("approve");
export const reject: Command = decide("reject");
