/**
 * The protocol's constants, shared by the daemon (`lib/protocol.ts`) and the plugin (`plugin/src/`), which is
 * bundled for Node: this module imports nothing and uses no runtime API, so both can load it as it is.
 */

export const PROTOCOL_VERSION = 1;
/** Largest text frame the daemon accepts on either socket; larger frames close the socket with 1009. */
export const MAX_FRAME_BYTES = 1024 * 1024;
/** Largest REST body the daemon reads; larger bodies answer 413. */
export const MAX_BODY_BYTES = 256 * 1024;
/** Largest prompt text the REST API forwards to a plugin. */
export const MAX_PROMPT_CHARS = 100_000;
/** Most events one `batch` frame may carry. */
export const MAX_BATCH_EVENTS = 5000;

/** pi's own rule for session ids (SessionManager), with a length bound of ours. */
export const SESSION_ID_RE = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,126}[A-Za-z0-9])?$/;

/** The roles a token can have, most powerful first (the browser hides what a role may not do). */
export const ROLES = ["admin", "operator", "viewer", "agent"] as const;
export type Role = typeof ROLES[number];

/** Close codes the daemon uses on both sockets. */
export const CloseCode = {
  normal: 1000,
  goingAway: 1001,
  policy: 1008,
  tooBig: 1009,
  internal: 1011,
  replaced: 4000,
  slowConsumer: 4001,
} as const;

/** Optional features of version 1 a daemon may list in `welcome.features`. */
export const Feature = {
  /** The plugin may send `batch` frames carrying many events, answered by one `ack`. */
  batch: "batch",
} as const;
