/** `lvmh spawn` and `lvmh stop`: a session in a container from a GitLab repository, and its end. */
import process from "node:process";
import type { SpawnBody, SpawnResult } from "../../lib/protocol.ts";
import { need, parse } from "./args.ts";
import type { Command } from "./command.ts";
import { api, enc } from "./http.ts";

export const spawn: Command = async (cfg, args) => {
  const { values, positionals } = parse(args, {
    branch: { type: "string" },
    ask: { type: "string" },
    json: { type: "boolean" },
  });
  const [repo] = need(positionals, 1, "GROUP/PROJECT");
  const body: SpawnBody = { repo };
  if (values.branch) body.branch = values.branch;
  if (values.ask !== undefined) body.ask = askSet(values.ask);
  const res = await api<SpawnResult>(cfg, "POST", "/api/spawn", body);
  process.stdout.write(
    values.json ? JSON.stringify(res) + "\n" : `${res.sessionId}\n`,
  );
};

/** `--ask`: `all`, `none` (or empty) for no tool, else a comma-separated list of tool names. */
function askSet(ask: string): NonNullable<SpawnBody["ask"]> {
  if (ask === "all") return "all";
  if (ask === "none" || ask === "") return [];
  return ask.split(",").map((s) => s.trim()).filter(Boolean);
}

export const stop: Command = async (cfg, args) => {
  const { positionals } = parse(args, {});
  const [id] = need(positionals, 1, "a session id");
  await api(cfg, "DELETE", `/api/sessions/${enc(id)}/container`);
};
