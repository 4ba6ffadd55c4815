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
/**
 * The plugin socket's upgrade header by which a plugin promises its application `ping` every this many ms (at
 * most MAX_PROMISED_PING_MS): the daemon then checks it by its frames instead of pinging it (lib/liveness.ts).
 */
export const HEARTBEAT_HEADER = "x-lvmh-heartbeat";
export const MAX_PROMISED_PING_MS = 5_000;

/**
 * Bounds of the fields the plugin writes (characters for strings, items for lists), as the daemon's schema
 * (`lib/protocol.ts`) checks them and the plugin (`plugin/src/`) cuts its values to them before sending: an
 * event over one is refused and, buffered, would be sent again for ever. Written here once for both sides.
 */
export const FieldMax = {
  /** A session's name in its snapshot (pi's session name, which the terminal can set to anything). */
  sessionName: 1000,
  /** A name given through the API (`PUT /api/sessions/:id/name`, then the `set_name` frame the plugin applies). */
  newName: 200,
  cwd: 4096,
  repo: 500,
  /** A model's id, provider or display name (snapshot, model list, `PUT /api/sessions/:id/model`). */
  model: 200,
  /** Models one snapshot may list. */
  models: 200,
  /** Input kinds of one model (`text`, `image`), and the length of one. */
  modelInputs: 10,
  modelInput: 20,
  thinkingLevel: 20,
  /** A message id, and a role named at message_start. */
  messageId: 200,
  role: 50,
  /** Images of one message or one prompt, and an image's mime type. */
  images: 100,
  mimeType: 100,
  /** Which prompt a user message shows, and who sent it. */
  promptId: 100,
  by: 200,
  /** An approval request: its id, and the tool call it holds. */
  approvalId: 100,
  toolCallId: 200,
  toolName: 200,
  /** Approval ids a `hello` announces as still waiting. */
  waiting: 10_000,
  /** A `command_result`: the command's id and the error text. */
  commandId: 100,
  commandError: 2000,
  byeReason: 200,
  /** The text of a `session_notice`. */
  noticeText: 1000,
} as const;

/** pi's own rule for session ids (SessionManager), with a length bound of ours. */
export const SESSION_ID_RE = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,126}[A-Za-z0-9])?$/;

/** The roles a token can have, most powerful first (the browser hides what a role may not do). */
export const ROLES = ["admin", "operator", "viewer", "agent"] as const;
export type Role = typeof ROLES[number];
/** The name of the daemon's own token (`LVMH_TOKEN`), an admin; no named token may take it. */
export const BOOTSTRAP_NAME = "bootstrap";

/** How lvmh's CLI starts its User-Agent (`lvmh-cli/1`): the daemon labels its prompts as typed there. */
export const CLI_USER_AGENT = "lvmh-cli/";

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

/** Optional features of version 1: a daemon lists its own in `welcome.features`, a plugin in `hello.features`. */
export const Feature = {
  /** The plugin may send `batch` frames carrying many events, answered by one `ack`. */
  batch: "batch",
  /**
   * Listed by a plugin in `hello`: it answers every `prompt` with `command_result` and takes a promptId once
   * (a repeat is answered, not run), so the daemon may keep a prompt until answered and send it again.
   */
  promptOnce: "prompt_once",
} as const;
