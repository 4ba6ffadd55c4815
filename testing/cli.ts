/**
 * Test helper: run the `lvmh` CLI (`cli/lvmh.mjs`) on Node 20, the oldest Node it supports, in a throwaway
 * config dir; as a one-shot command or as a long-running child (`tail -f`) whose output a test can watch.
 */
import { fileURLToPath } from "node:url";
import { waitFor } from "./daemon.ts";
import { signalChild } from "./proc.ts";

export const CLI = fileURLToPath(new URL("../cli/lvmh.mjs", import.meta.url));
const NODE = "/usr/bin/node";

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Env for the CLI: a daemon's URL and token (when given), a private XDG_CONFIG_HOME, nothing else. */
export function cliEnv(
  configDir: string,
  daemon?: { url: string; token: string },
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    HOME: configDir,
    XDG_CONFIG_HOME: configDir,
    ...(daemon ? { LVMH_URL: daemon.url, LVMH_TOKEN: daemon.token } : {}),
    ...extra,
  };
}

/** Run `lvmh ARGS` to completion (30 s at most), with optional stdin text. */
export async function lvmh(env: Record<string, string>, args: string[], stdin?: string): Promise<CliResult> {
  const child = new Deno.Command(NODE, {
    args: [CLI, ...args],
    env,
    clearEnv: true,
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(30_000),
  }).spawn();
  if (stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const out = await child.output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** A running `lvmh` process (e.g. `tail -f`): its output so far, a wait on it, and a stop. */
export interface CliProcess extends AsyncDisposable {
  stdout(): string;
  stderr(): string;
  waitOut(pred: (out: string) => boolean, what: string, timeoutMs?: number): Promise<string>;
  stop(): Promise<void>;
}

/** Start `lvmh ARGS` in the background. */
export function spawnLvmh(env: Record<string, string>, args: string[]): CliProcess {
  const child = new Deno.Command(NODE, {
    args: [CLI, ...args],
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let out = "";
  let err = "";
  const pump = async (s: ReadableStream<Uint8Array>, add: (t: string) => void) => {
    const dec = new TextDecoder();
    for await (const chunk of s) add(dec.decode(chunk, { stream: true }));
  };
  const pumps = Promise.all([pump(child.stdout, (t) => out += t), pump(child.stderr, (t) => err += t)]);
  let done = false;
  const stop = async () => {
    if (!done) {
      done = true;
      signalChild(child, "SIGTERM");
    }
    await child.status;
    await pumps;
  };
  return {
    stdout: () => out,
    stderr: () => err,
    waitOut: (pred, what, timeoutMs = 15_000) => waitFor(() => pred(out) ? out : null, what, timeoutMs),
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
