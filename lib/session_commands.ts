/**
 * What the session registry (lib/sessions.ts) is handed and hands out: its plugin links, the commands it
 * sends them, prompts, and what it needs from the replicas' shared database. Types only.
 */
import type { AskSet, DaemonFrame, DeliverAs, PromptImage, PromptSource, SessionInfo } from "./protocol.ts";
import type { StoredImageRef } from "./image_store.ts";

/** The daemon's side of one plugin connection, as far as routing commands needs it. */
export interface PluginLink {
  send(frame: DaemonFrame): void;
  close(code: number, reason: string): void;
}

/** The daemon → plugin frames that carry a person's (or a hook's) command, as opposed to the transport's. */
export type CommandType =
  | "prompt"
  | "abort"
  | "set_model"
  | "set_name"
  | "policy"
  | "approval_decision"
  | "changes";
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** A command to a session's plugin: its protocol frame without the envelope, which `send` adds. */
export type Command = DistributiveOmit<
  Extract<DaemonFrame, { type: CommandType }>,
  "v" | "sessionId" | "seq" | "ts"
>;

/** A prompt as the REST route and the inbound hooks hand it to `Sessions.prompt`. */
export interface PromptRequest {
  message: string;
  deliverAs: DeliverAs;
  /** Checked here (`checkImages`) and kept by the image store before the frame leaves. */
  images?: readonly PromptImage[];
  /** Who sends it: a token's name, `bootstrap`, or `hook:NAME`; the plugin puts it on the user message. */
  by: string;
  /** Where it was typed (absent: the page or the REST API). */
  source?: PromptSource;
  /** The prompt's id, for a prompt kept across restarts (a hook's); a fresh one otherwise. */
  promptId?: string;
  /** `images` as `keepShared` already kept them (with replicas): `prompt` then keeps nothing itself. */
  kept?: StoredImageRef[];
}

/** What a sent prompt leaves for the audit log: what was asked, and of its images only what the store keeps. */
export interface SentPrompt {
  promptId: string;
  message: string;
  deliverAs: DeliverAs;
  images?: StoredImageRef[];
}

/**
 * What the registry needs when several replicas share one database (lib/replica/): the holder's claim, the
 * shared command queue, and which sessions another replica holds.
 */
export interface SharedSessions {
  /** Claim the session for this replica: its epoch, and its lastSeq and ask set in the shared database. */
  claim(info: SessionInfo, notAfter: number): Promise<{ epoch: number; lastSeq: number; ask: AskSet | null }>;
  /** Bring this replica's copy of the session's events up to the shared log. */
  catchUp(sessionId: string): Promise<void>;
  /** The socket of `epoch` went (a newer claim is left alone). */
  release(sessionId: string, epoch: number): void;
  /**
   * Queue a command for whichever replica holds the session (in send order; never throws); with `ifHeld`,
   * only if one does.
   */
  send(frame: DaemonFrame & { type: CommandType }, options?: { ifHeld?: boolean }): void;
  /** Hand the session's queued commands to its socket here. */
  take(sessionId: string): void;
  /** True when a live replica other than this one holds the session. */
  heldElsewhere(sessionId: string): boolean;
  /** Store a session's own ask set in the shared row. */
  setAsk(sessionId: string, ask: AskSet): Promise<void>;
  /** Make a session's shared row, with its ask set, before its plugin can say hello to any replica. */
  register(info: SessionInfo, ask: AskSet): Promise<void>;
  /** Delete the session from the shared database (and so from every replica's copy). */
  deleteSession(sessionId: string): Promise<void>;
}
