/** `lvmh token add|list|revoke`: named tokens (admin). */
import process from "node:process";
import type { TokenInfo } from "../../lib/protocol.ts";
import type { Identity } from "../../lib/tokens.ts";
import { need, parse } from "./args.ts";
import type { Command } from "./command.ts";
import { usage } from "./errors.ts";
import { api, enc } from "./http.ts";
import { ago, printJsonLines, printTable } from "./output.ts";

export const token: Command = async (cfg, args) => {
  const { values, positionals } = parse(args, {
    role: { type: "string" },
    json: { type: "boolean" },
  });
  const [sub, ...rest] = positionals;
  if (sub === "list") {
    need(rest, 0, "no arguments after list");
    const list = await api<TokenInfo[]>(cfg, "GET", "/api/tokens");
    if (values.json) return printJsonLines(list);
    return printTable(
      ["NAME", "ROLE", "CREATED", "LAST USED", "REVOKED"],
      list.map((
        t,
      ) => [
        t.name,
        t.role,
        ago(t.createdAt),
        ago(t.lastUsedAt),
        t.revokedAt ? ago(t.revokedAt) : "-",
      ]),
    );
  }
  if (sub === "add") {
    const [name] = need(rest, 1, "a token name");
    if (!values.role) {
      throw usage("token add needs --role admin|operator|viewer|agent");
    }
    // The role is the daemon's to check: it names the valid ones when it refuses.
    const res = await api<Identity & { token: string }>(
      cfg,
      "POST",
      "/api/tokens",
      { name, role: values.role },
    );
    process.stdout.write(
      values.json ? JSON.stringify(res) + "\n" : `${res.token}\n`,
    );
    return;
  }
  if (sub === "revoke") {
    const [name] = need(rest, 1, "a token name");
    await api(cfg, "DELETE", `/api/tokens/${enc(name)}`);
    return;
  }
  throw usage("expected token add, token list or token revoke");
};
