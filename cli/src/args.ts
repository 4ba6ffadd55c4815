/** A command's arguments: options through node:util's parseArgs, positionals counted, stdin read whole. */
import process from "node:process";
import { Buffer } from "node:buffer";
import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import { usage } from "./errors.ts";

/** Parse a command's arguments; unknown options are a usage error. */
export function parse<O extends ParseArgsOptionsConfig>(
  args: string[],
  options: O,
) {
  try {
    return parseArgs({
      args,
      options: { ...options, help: { type: "boolean" } },
      allowPositionals: true,
    });
  } catch (error) {
    throw usage((error as Error).message);
  }
}

/** Exactly `n` positionals, else a usage error naming what was expected (`names`). */
export function need(values: string[], n: number, names: string): string[] {
  if (values.length !== n) {
    throw usage(`expected ${names}, got ${values.length} argument(s)`);
  }
  return values;
}

/** All of stdin, as UTF-8. */
export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c);
  return Buffer.concat(chunks).toString("utf8");
}
