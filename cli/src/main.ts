/**
 * lvmh: the command-line client of the lvmh daemon (Node >= 20, no dependencies).
 * Exit codes: 0 ok, 1 the daemon refused (its error is printed), 2 bad usage, 3 cannot reach the daemon.
 */
import process from "node:process";
import { commandNamed } from "./commands.ts";
import { type Globals, loadConfig } from "./config.ts";
import { CliError, usage } from "./errors.ts";
import { HELP } from "./help.ts";

/** Run the CLI with `argv` (without node and the script); resolves with the exit code. */
export async function main(argv: string[]): Promise<number> {
  // Global options come before the command.
  const globals: Globals = {};
  let i = 0;
  for (; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--url" || a === "--token") {
      if (argv[i + 1] === undefined) return fail(usage(`${a} needs a value`));
      globals[a === "--url" ? "url" : "token"] = argv[++i];
    } else if (a.startsWith("--url=") || a.startsWith("--token=")) {
      const [k, ...v] = a.slice(2).split("=");
      globals[k as keyof Globals] = v.join("=");
    } else break;
  }
  const [name, ...args] = argv.slice(i);
  if (!name || name === "--help" || name === "-h" || name === "help") {
    (name ? process.stdout : process.stderr).write(HELP[""] + "\n");
    return name ? 0 : 2;
  }
  const command = commandNamed(name);
  if (!command) return fail(usage(`unknown command "${name}"`));
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(HELP[name as keyof typeof HELP] + "\n");
    return 0;
  }
  try {
    await command(await loadConfig(globals), args);
    return 0;
  } catch (error) {
    return fail(error);
  }
}

/** Print why the command failed; the exit code (1 for an unexpected error, with its stack). */
function fail(error: unknown): number {
  if (!(error instanceof CliError)) {
    process.stderr.write(
      `lvmh: ${(error as Error | undefined)?.stack ?? error}\n`,
    );
    return 1;
  }
  process.stderr.write(`lvmh: ${error.message}\n`);
  if (error.code === 2) process.stderr.write(`see lvmh --help\n`);
  return error.code;
}
