/**
 * `lvmh resume ID`, `lvmh logs ID [--tail N]` and `lvmh bundle ID > work.bundle`: a spawned session's
 * worker after a stop or a crash: start it again on its kept storage, read its last log lines, download its
 * work as a git bundle.
 */
import process from "node:process";
import type { ResumeResult } from "../../lib/protocol.ts";
import { need, parse } from "./args.ts";
import type { Command } from "./command.ts";
import { api, enc, headersFor, refusal, unreachable } from "./http.ts";
import type { Config } from "./config.ts";
import { CliError } from "./errors.ts";

export const resume: Command = async (cfg, args) => {
  const { values, positionals } = parse(args, { json: { type: "boolean" } });
  const [id] = need(positionals, 1, "a session id");
  const r = await api<ResumeResult>(
    cfg,
    "POST",
    `/api/sessions/${enc(id)}/resume`,
    {},
  );
  process.stdout.write(
    values.json ? JSON.stringify(r) + "\n" : `resumed ${id} (job ${r.jobId})\n`,
  );
};

export const logs: Command = async (cfg, args) => {
  const { values, positionals } = parse(args, { tail: { type: "string" } });
  const [id] = need(positionals, 1, "a session id");
  const tail = values.tail ?? "100";
  if (!/^[1-9][0-9]*$/.test(tail) || Number(tail) > 1000) {
    throw new CliError(2, "--tail must be a whole number from 1 to 1000");
  }
  const res = await get(
    cfg,
    `/api/sessions/${enc(id)}/container/logs?tail=${tail}`,
  );
  process.stdout.write(await res.text());
};

export const bundle: Command = async (cfg, args) => {
  const { positionals } = parse(args, {});
  const [id] = need(positionals, 1, "a session id");
  if (process.stdout.isTTY) {
    throw new CliError(
      2,
      "a bundle is binary: redirect it, lvmh bundle ID > work.bundle",
    );
  }
  const res = await get(cfg, `/api/sessions/${enc(id)}/bundle`);
  const bytes = new Uint8Array(await res.arrayBuffer());
  await new Promise<void>((resolve, reject) => process.stdout.write(bytes, (e) => e ? reject(e) : resolve()));
};

/** A GET whose answer is not JSON (text, bytes); a refusal or unreachability as a `CliError`. */
async function get(cfg: Config, path: string): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(cfg.url + path, { headers: headersFor(cfg) });
  } catch (error) {
    throw unreachable(cfg, error);
  }
  if (!res.ok) throw await refusal(res);
  return res;
}
