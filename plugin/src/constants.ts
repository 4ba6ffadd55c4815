/**
 * The plugin's own limits and timings (the protocol's shared ones live in `lib/wire.ts`).
 */

/** Unacknowledged events kept in memory; past this the oldest are dropped and reported. */
export const MAX_BUFFER = 10_000;
/** ...and the characters they may hold (tool output is large): about 64 MB of strings at most. */
export const MAX_BUFFER_CHARS = 32_000_000;
/** Longest tool output preview and error message sent. */
export const PREVIEW_CHARS = 2048;
/** Longest arguments shown in the terminal's approval question. */
export const TITLE_ARGS_CHARS = 200;
/** Longest text field sent (message text, thinking, arguments JSON). */
export const MAX_TEXT = 100_000;
/**
 * A frame over this many UTF-16 units is shrunk first: one unit takes at most 3 bytes in UTF-8, so a frame
 * this long stays under the daemon's byte limit with room to spare.
 */
export const MAX_FRAME_CHARS = 330_000;
/** First reconnect delay (doubled on each failure, with jitter). */
export const BACKOFF_MIN_MS = 250;
/** Longest reconnect delay. */
export const BACKOFF_MAX_MS = 30_000;
/** After close code 4000 (a newer socket took over this session) back off from here, not from the minimum. */
export const REPLACED_MIN_MS = 5_000;
/** A socket whose hello is not welcomed within this is closed and redialled. */
export const WELCOME_TIMEOUT_MS = 10_000;
/** Frames written per turn of the event loop, so a long replay never blocks pi. */
export const SEND_BATCH = 256;
/** Stop writing while the socket holds this much unsent data. */
export const HIGH_WATER_BYTES = 1 << 20;
/** At most one `tool_execution_update` per tool call per this many ms. */
export const TOOL_UPDATE_MS = 200;
/** How often pi's idleness is polled while something waits for it. */
export const POLL_MS = 10;
/** After sending a prompt to an idle pi, how long to wait for its agent_start before trusting isIdle() again. */
export const START_WAIT_MS = 2_000;
/** How long pi's exit waits for the daemon to take the last events. */
export const SHUTDOWN_WAIT_MS = 1_500;
/** Seq files are written at most this often. */
export const SEQ_WRITE_MS = 300;
/** pi 0.73.1 reports no rename while idle: how often the session name is polled. */
export const RENAME_POLL_MS = 3_000;
/** The log file is rotated past this size. */
export const LOG_MAX_BYTES = 1 << 20;
/** A session untouched this long will not be continued with `pi -c`; its seq file goes. */
export const SEQ_KEEP_MS = 180 * 24 * 3600 * 1000;
/** How long the first tool calls of a session wait for the daemon's ask set (its first welcome). */
export const POLICY_WAIT_MS = 3_000;
/** The plugin pings the daemon this often (application `ping`, answered by `pong`). */
export const HEARTBEAT_PING_MS = 5_000;
/** Nothing at all from the daemon for this long: the socket is dead, reconnect. */
export const HEARTBEAT_DEAD_MS = 15_000;
/** Events one `batch` frame carries at most (the daemon takes up to 5,000; smaller keeps each turn short). */
export const BATCH_MAX_EVENTS = 512;
/** Delivered prompts remembered until their user message shows (older ones are forgotten first). */
export const MAX_WEB_PROMPTS = 50;

/** The `session_notice` of a resumed session pi had not saved (pi 0.73.1 writes nothing before an answer). */
export const NOT_SAVED_TEXT =
  "pi had not saved this conversation yet: the agent starts this resumed session without its earlier context";
