/** Transport 3 of the protocol: the browser socket `/ws`, both ways. */
import { z } from "zod";
import { SessionId } from "./shapes.ts";
import { type Approval, seqParam, type SessionSummary, type SpawnJob, type StoredEvent } from "./rest.ts";

// ---------------------------------------------------------------------------------------------
// Browser socket (Transport 3)

export const SubscribeFrame = z.object({
  type: z.literal("subscribe"),
  sessionId: SessionId,
  /** Optional catch-up: persisted events with seq > after are sent before live ones. */
  after: seqParam.optional(),
});
export const UnsubscribeFrame = z.object({ type: z.literal("unsubscribe"), sessionId: SessionId });
/** Ask for the whole session list again (answered by `session_list`). */
export const ListFrame = z.object({ type: z.literal("list") });
/** Application heartbeat, answered by `pong`. */
export const BrowserPingFrame = z.object({ type: z.literal("ping") });
/**
 * This page shows the session (sent when it opens, again whenever `typing` changes and after a reconnect), or
 * with `leave` no longer does. Answered by `presence` frames to every browser.
 */
export const WatchFrame = z.object({
  type: z.literal("watch"),
  sessionId: SessionId,
  typing: z.boolean().default(false),
  leave: z.boolean().optional(),
});
export const BrowserFrame = z.discriminatedUnion("type", [
  SubscribeFrame,
  UnsubscribeFrame,
  ListFrame,
  BrowserPingFrame,
  WatchFrame,
]);
export type BrowserFrame = z.infer<typeof BrowserFrame>;

/** Frames the daemon sends to browsers; plain types, since the daemon only writes them. */
export type ServerFrame =
  | { type: "session_list"; sessions: SessionSummary[] }
  /** Rows that changed since the last list or update (coalesced per tick), and ids that were deleted. */
  | { type: "session_update"; sessions: SessionSummary[]; removed: string[] }
  | { type: "approvals"; pending: Approval[] }
  | { type: "pong" }
  | { type: "events"; sessionId: string; after: number; events: StoredEvent[] }
  | { type: "spawn_status"; jobs: SpawnJob[] }
  /** Who has the session's page open (by token name, typing or not) and who holds its wheel. */
  | { type: "presence"; sessionId: string; watchers: PresenceWatcher[]; wheel?: Wheel }
  | { type: "error"; message: string };
export type ServerFrameType = ServerFrame["type"];
/** A person with the session's page open (several tabs are one), typing in its composer or not. */
export interface PresenceWatcher {
  name: string;
  typing: boolean;
}
/** Who steers a session, until when (ms): other people's prompts and aborts wait, unless forced. */
export interface Wheel {
  holder: string;
  until: number;
}
/**
 * Every `ServerFrame` type once. The daemon only writes these frames, so they have no schema to list them;
 * the annotation makes the compiler check this record against the union both ways (a type missing here, or
 * one the union lacks, fails `deno check`).
 */
const SERVER_FRAME_TYPES: Record<ServerFrameType, true> = {
  session_list: true,
  session_update: true,
  approvals: true,
  pong: true,
  events: true,
  spawn_status: true,
  presence: true,
  error: true,
};
export const serverFrameTypes = Object.keys(SERVER_FRAME_TYPES) as ServerFrameType[];
