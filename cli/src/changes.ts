/** `lvmh changes ID [--stat] [--uncommitted]`: what a session changed, as a diff or as a summary. */
import process from "node:process";
import type { ChangedFile, Changes } from "../../lib/protocol.ts";
import { need, parse } from "./args.ts";
import type { Command } from "./command.ts";
import { api, enc } from "./http.ts";
import { printTable } from "./output.ts";

export const changes: Command = async (cfg, args) => {
  const { values, positionals } = parse(args, {
    stat: { type: "boolean" },
    uncommitted: { type: "boolean" },
    json: { type: "boolean" },
  });
  const [id] = need(positionals, 1, "a session id");
  const scope = values.uncommitted ? "uncommitted" : "all";
  const c = await api<Changes>(cfg, "GET", `/api/sessions/${enc(id)}/changes?scope=${scope}`);
  if (values.json) return void process.stdout.write(JSON.stringify(c) + "\n");
  const out = (line: string) => process.stdout.write(line + "\n");
  out(summary(c));
  for (const commit of c.commits) out(`  ${commit.sha.slice(0, 10)} ${commit.title} (${commit.author})`);
  if (values.stat) {
    if (c.files.length) {
      printTable(
        ["STATUS", "+", "-", "PATH"],
        c.files.map((f) => [f.status, f.binary ? "bin" : f.additions, f.binary ? "" : f.deletions, label(f)]),
      );
    }
  } else {
    for (const f of c.files) {
      if (f.diff !== undefined) {
        process.stdout.write(f.diff.endsWith("\n") || !f.diff ? f.diff : f.diff + "\n");
      }
      if (f.diff === undefined || f.truncated) out(`# ${label(f)}: ${why(f)}`);
    }
  }
  if (c.truncated) out("# the answer reached its size limit: some files are listed with counts only");
};

function summary(c: Changes): string {
  if (!c.base) return c.head ? `no base: ${c.stats.files} file(s) changed` : "not a git repository";
  const against = `${c.base.branch} ${c.base.sha.slice(0, 10)}`;
  const s = c.stats;
  return `${c.scope === "uncommitted" ? "uncommitted, against" : "against"} ${against}` +
    `${c.branch ? ` on ${c.branch}` : ""}: ${s.files} file(s), +${s.additions} -${s.deletions}` +
    (c.commits.length ? `, ${c.commits.length} commit(s):` : "");
}

function label(f: ChangedFile): string {
  const path = f.oldPath ? `${f.oldPath} → ${f.path}` : f.path;
  return f.collapsed ? `${path} (collapsed)` : f.truncated ? `${path} (truncated)` : path;
}

function why(f: ChangedFile): string {
  const counts = f.binary ? "binary" : `+${f.additions} -${f.deletions}`;
  if (f.collapsed) return `${counts}, diff not shown (GET /api/sessions/:id/changes/file?path=…)`;
  return `${counts}, diff ${f.diff === undefined ? "not shown" : "cut"}: too large`;
}
