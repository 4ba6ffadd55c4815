/** Every command, by the name it is called with. */
import { approvals, approve, reject } from "./approvals.ts";
import { changes } from "./changes.ts";
import type { Command } from "./command.ts";
import { login } from "./login.ts";
import { mr } from "./mr.ts";
import { abort, prompt } from "./prompt.ts";
import { exportSession, search } from "./search.ts";
import { sessions } from "./sessions.ts";
import { spawn, stop } from "./spawn.ts";
import { tail } from "./tail.ts";
import { token } from "./token.ts";
import { bundle, logs, resume } from "./worker.ts";
import { usage } from "./usage.ts";
import { budget } from "./budget.ts";

export const commands = {
  login,
  sessions,
  tail,
  prompt,
  abort,
  approvals,
  approve,
  reject,
  spawn,
  stop,
  resume,
  logs,
  bundle,
  token,
  changes,
  mr,
  search,
  export: exportSession,
  usage,
  budget,
} satisfies Record<string, Command>;

export type CommandName = keyof typeof commands;

/** The command called `name`, or null (only own names: `lvmh toString` is unknown). */
export function commandNamed(name: string): Command | null {
  return Object.hasOwn(commands, name) ? commands[name as CommandName] : null;
}
