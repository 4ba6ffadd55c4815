/**
 * The slice of pi's extension API the plugin uses, written to fit both pi 0.73.1 and 1.6.0 (the plugin
 * imports nothing from pi, so one file loads in both).
 */

/** A model of pi's registry (pi-ai's `Model`, the fields the plugin reads). */
export interface PiModel {
  id?: string;
  provider?: string;
  name?: string;
  input?: string[];
}

/** pi's model registry (`ctx.modelRegistry`, the same methods on 0.73.1 and 1.6.0). */
export interface PiModelRegistry {
  getAvailable(): PiModel[];
  find(provider: string, modelId: string): PiModel | undefined;
  hasConfiguredAuth(model: PiModel): boolean;
}

/** A part of a user message (`ImageContent` is base64 `data` with its `mimeType`). */
export type PiContent = { type: "text"; text: string } | {
  type: "image";
  data: string;
  mimeType: string;
};

/** pi's `ctx` as handlers receive it. */
export interface PiContext {
  cwd?: string;
  model?: PiModel | null;
  modelRegistry?: PiModelRegistry;
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

/**
 * A pi message (pi-agent-core's `AgentMessage`), the fields the plugin reads: the protocol's four roles, and
 * pi's own (`bashExecution` with `command` and `output`, summaries with `summary`, custom ones).
 */
export interface PiMessage {
  role?: unknown;
  timestamp?: unknown;
  /** A string, or an array of text/image/thinking/toolCall parts. */
  content?: unknown;
  command?: unknown;
  output?: unknown;
  summary?: unknown;
  toolCallId?: unknown;
  toolName?: unknown;
  isError?: unknown;
  stopReason?: string;
  errorMessage?: unknown;
  [field: string]: unknown;
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
    message: string | PiContent[],
    options?: { deliverAs?: "steer" | "followUp" },
  ): void;
  /** Resolves false when the model has no API key; 0.73.1 also makes it the global default. */
  setModel?(model: PiModel): Promise<boolean>;
  getThinkingLevel?(): string;
  setThinkingLevel?(level: string): void;
  setSessionName?(name: string): void;
}
