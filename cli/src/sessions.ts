/** `lvmh sessions`: the session list, as a table or as JSON lines. */
import type { SessionSummary } from "../../lib/protocol.ts";
import { need, parse } from "./args.ts";
import type { Command } from "./command.ts";
import { api } from "./http.ts";
import { ago, printJsonLines, printTable, short } from "./output.ts";

export const sessions: Command = async (cfg, args) => {
  const { values, positionals } = parse(args, {
    online: { type: "boolean" },
    json: { type: "boolean" },
  });
  need(positionals, 0, "no arguments");
  let list = await api<SessionSummary[]>(cfg, "GET", "/api/sessions");
  if (values.online) list = list.filter((s) => s.online);
  if (values.json) return printJsonLines(list);
  printTable(
    ["ID", "STATE", "NAME", "WHERE", "MODEL", "LAST ACTIVITY", "WAITING"],
    list.map((s) => [
      s.id,
      s.online ? s.state : stateOffline(s),
      short(s.name ?? "", 40),
      s.repo ?? s.cwd ?? "",
      s.model ?? "",
      ago(s.lastEventAt ?? s.startedAt),
      s.waiting ?? 0,
    ]),
  );
};

/** An offline session's state: a spawned one's worker stopped or crashed (resumable, with why), else offline. */
function stateOffline(s: SessionSummary): string {
  if (s.container === "stopped") return "stopped";
  if (s.container === "crashed") return `crashed (${s.reason ?? "?"})`;
  return "offline";
}
