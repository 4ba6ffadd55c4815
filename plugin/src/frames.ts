/**
 * The protocol's frames as the plugin sees them, derived from the daemon's schemas in `lib/protocol/`.
 * Type-only: the bundler erases these imports, so none of the schemas' code reaches `plugin/lvmh-agent.mjs`.
 */
import type { AgentEventInput, AgentEventType, DaemonFrame } from "../../lib/protocol/plugin.ts";

export type { AgentEventType, DaemonFrame };
export type { HelloFrameInput, PingFrameInput } from "../../lib/protocol/plugin.ts";
export type {
  AskSet,
  Message,
  MessageFrom,
  MessageImage,
  ModelEntry,
  PromptSource,
  SessionInfo,
} from "../../lib/protocol/shapes.ts";

/** The envelope every frame carries: the link writes it, and nothing reads the daemon's. */
type Envelope = "v" | "sessionId" | "seq" | "ts";

/**
 * A daemon frame of type `T` without its envelope. Typed as the protocol says, but not checked on arrival
 * (the plugin carries no schema code), so a handler still guards the fields it relies on.
 */
export type FrameOf<T extends DaemonFrame["type"]> = Omit<Extract<DaemonFrame, { type: T }>, Envelope>;

/**
 * What an event of type `T` carries besides the envelope and its type, as the plugin writes it (the schema's
 * input, before the daemon applies defaults). The schemas keep unknown fields, so their types have an index
 * signature; it is left out here so that a misspelt or renamed field fails the type check.
 */
export type EventPayload<T extends AgentEventType> = KnownFields<Extract<AgentEventInput, { type: T }>>;

type KnownFields<T> = {
  [K in keyof T as K extends Envelope | "type" ? never : string extends K ? never : K]: T[K];
};
