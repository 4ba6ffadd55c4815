/**
 * The slice of pi's extension API the plugin uses, written to fit both pi 0.73.1 and 1.6.0 (the plugin
 * imports nothing from pi, so one file loads in both).
 */

/** pi's `ctx` as handlers receive it. */
export interface PiContext {
  cwd?: string;
  model?: { id?: string; provider?: string } | null;
  sessionManager: {
    getSessionId(): string;
    getSessionName?(): string | undefined;
    getHeader?(): { timestamp?: string } | null | undefined;
    getCwd?(): string;
  };
  isIdle(): boolean;
  abort(): void;
  /** The current run's abort signal (undefined when pi is not streaming). */
  signal?: AbortSignal;
  /** True in the interactive TUI (and RPC), where `ui` dialogs reach a person. */
  hasUI?: boolean;
  ui?: {
    select(
      title: string,
      options: string[],
      opts?: { signal?: AbortSignal },
    ): Promise<string | undefined>;
  };
}

/** A pi event as handlers receive it: any fields. */
// deno-lint-ignore no-explicit-any
export type PiEvent = Record<string, any>;

/** A handler: what it returns matters for a few events (tool_call, session_shutdown). */
export type PiHandler = (event: PiEvent, ctx: PiContext) => unknown;

/** `pi` as the extension factory receives it. */
export interface PiApi {
  /** pi 1.6.0 returns an unsubscribe function, 0.73.1 nothing: that tells the two apart. */
  on(name: string, handler: PiHandler): unknown;
  sendUserMessage(
    message: string,
    options?: { deliverAs?: "steer" | "followUp" },
  ): void;
}
