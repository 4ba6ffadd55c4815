/**
 * `lvmh search QUERY [--session ID] [--type T] [--limit N] [--json]`: ranked hits over every session, and
 * `lvmh export ID [--format md|jsonl|html] > FILE`: a session as Markdown, JSONL or self-contained HTML.
 */
import process from "node:process";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { SearchPage } from "../../lib/protocol.ts";
import { need, parse } from "./args.ts";
import type { Command } from "./command.ts";
import { api, enc, headersFor, refusal, unreachable } from "./http.ts";
import { CliError } from "./errors.ts";
import { ago, printJsonLines, printTable, short } from "./output.ts";

const TYPES = ["message", "prompt", "tool"];
const FORMATS = ["md", "jsonl", "html"];

export const search: Command = async (cfg, args) => {
  const { values, positionals } = parse(args, {
    session: { type: "string" },
    type: { type: "string" },
    limit: { type: "string" },
    json: { type: "boolean" },
  });
  const q = need(positionals, 1, "a query").join(" ");
  if (values.type !== undefined && !TYPES.includes(values.type)) {
    throw new CliError(2, `--type must be one of ${TYPES.join(", ")}`);
  }
  const limit = values.limit ?? "20";
  if (!/^[1-9][0-9]*$/.test(limit) || Number(limit) > 100) {
    throw new CliError(2, "--limit must be a whole number from 1 to 100");
  }
  const params = new URLSearchParams({ q, limit });
  if (values.session) params.set("sessionId", values.session);
  if (values.type) params.set("type", values.type);
  const page = await api<SearchPage>(cfg, "GET", `/api/search?${params}`);
  if (values.json) return printJsonLines(page.hits);
  if (!page.hits.length) return void process.stdout.write("no hits\n");
  printTable(
    ["SESSION", "SEQ", "KIND", "WHEN", "TEXT"],
    page.hits.map((h) => [h.sessionId, h.seq, h.toolName ?? h.type, ago(h.ts), short(h.snippet, 100)]),
  );
  if (page.next) process.stdout.write(`(more hits: --limit ${Math.min(100, Number(limit) * 2)})\n`);
};

export const exportSession: Command = async (cfg, args) => {
  const { values, positionals } = parse(args, { format: { type: "string" } });
  const [id] = need(positionals, 1, "a session id");
  const format = values.format ?? "md";
  if (!FORMATS.includes(format)) throw new CliError(2, `--format must be one of ${FORMATS.join(", ")}`);
  let res: Response;
  try {
    res = await fetch(`${cfg.url}/api/sessions/${enc(id)}/export?format=${format}`, {
      headers: headersFor(cfg),
    });
  } catch (error) {
    throw unreachable(cfg, error);
  }
  if (!res.ok || !res.body) throw await refusal(res);
  // Streamed as it comes: a long session's export is never held whole.
  await pipeline(Readable.fromWeb(res.body as import("node:stream/web").ReadableStream), process.stdout);
};
