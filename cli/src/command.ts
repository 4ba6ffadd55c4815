/** What every command is: its arguments (after the command's name) against the loaded configuration. */
import type { Config } from "./config.ts";

/** Runs one command; throws a `CliError` for the exit codes 1 to 3, resolves for 0. */
export type Command = (cfg: Config, args: string[]) => Promise<void>;
