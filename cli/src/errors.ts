/** The CLI's one error type: its `code` is the process's exit code. */

/** Exit codes: 1 the daemon refused (its error is printed), 2 bad usage, 3 the daemon cannot be reached. */
export type ExitCode = 1 | 2 | 3;

export class CliError extends Error {
  code: ExitCode;

  constructor(code: ExitCode, message: string) {
    super(message);
    this.code = code;
  }
}

/** A usage error (exit code 2). */
export const usage = (message: string): CliError => new CliError(2, message);
