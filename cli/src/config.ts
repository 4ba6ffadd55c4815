/** Where the CLI finds the daemon and its token: the global options, then the environment, then the file. */
import process from "node:process";
import { readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { usage } from "./errors.ts";

export const DEFAULT_URL = "http://127.0.0.1:8686";

/** The daemon to talk to: its http(s) base and the bearer token (null: none). */
export interface Config {
  url: string;
  token: string | null;
}

/** `--url` and `--token`, given before the command. */
export interface Globals {
  url?: string;
  token?: string;
}

/** The config file path: $XDG_CONFIG_HOME/lvmh/config.json or ~/.config/lvmh/config.json. */
export function configPath(): string {
  return join(
    process.env.XDG_CONFIG_HOME || join(homedir(), ".config"),
    "lvmh",
    "config.json",
  );
}

/** The file `lvmh login` writes; an absent or unreadable one is empty. */
async function readConfigFile(): Promise<Partial<Config>> {
  try {
    return JSON.parse(await readFile(configPath(), "utf8"));
  } catch {
    return {};
  }
}

/** The daemon's http(s) base from any accepted form (`ws://h:p/agent/ws` included). */
export function normaliseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw usage(`not a URL: ${raw}`);
  }
  if (url.protocol === "ws:") url.protocol = "http:";
  else if (url.protocol === "wss:") url.protocol = "https:";
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw usage(`not an http(s) URL: ${raw}`);
  }
  const path = url.pathname.replace(/\/agent\/ws\/?$|\/ws\/?$/, "").replace(
    /\/+$/,
    "",
  );
  return url.origin + path;
}

/** The configuration, first found wins: the global options, LVMH_URL / LVMH_TOKEN, the config file. */
export async function loadConfig(globals: Globals): Promise<Config> {
  const file = await readConfigFile();
  const env = (name: string) => process.env[name] || undefined;
  return {
    url: normaliseUrl(
      globals.url ?? env("LVMH_URL") ?? file.url ?? DEFAULT_URL,
    ),
    token: globals.token ?? env("LVMH_TOKEN") ?? file.token ?? null,
  };
}
