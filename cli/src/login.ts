/** `lvmh login`: check a token against the daemon, then save URL and token to the config file. */
import process from "node:process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parse, readStdin } from "./args.ts";
import type { Command } from "./command.ts";
import { configPath, normaliseUrl } from "./config.ts";
import { usage } from "./errors.ts";
import { api } from "./http.ts";

export const login: Command = async (cfg, args) => {
  const { values, positionals } = parse(args, { token: { type: "string" } });
  if (positionals.length > 1) throw usage("expected at most a URL");
  const url = positionals[0] ? normaliseUrl(positionals[0]) : cfg.url;
  let token = values.token ?? process.env.LVMH_TOKEN;
  if (!token) token = (await readStdin()).split(/\r?\n/)[0].trim();
  if (!token) {
    throw usage("no token: pass --token, set LVMH_TOKEN or pipe it on stdin");
  }
  await api({ url, token }, "GET", "/api/sessions");
  const path = configPath();
  await mkdir(join(path, ".."), { recursive: true, mode: 0o700 });
  await writeFile(path, JSON.stringify({ url, token }, null, 2) + "\n", {
    mode: 0o600,
  });
  process.stdout.write(`logged in to ${url} (saved in ${path})\n`);
};
