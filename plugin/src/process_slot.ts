/**
 * State shared by every factory run in one process: pi re-runs the extension factory on /new, /resume and
 * /reload, and each run must find the session's link, the logger and the WebSocket class again. Each module
 * keeps its own named slot (and types it), so this module imports nothing and knows none of them.
 */

/** Where the slots live: one object on `globalThis`, found again by every factory run (and by tests). */
const STATE = Symbol.for("lvmh-agent.state");

/**
 * The process-wide value named `name`, made by `make` on first use.
 * @param name the slot's name, unique among the plugin's modules
 * @param make builds the value when the slot is empty (null and undefined count as empty)
 */
export function processSlot<T>(name: string, make: () => T): T {
  const g = globalThis as unknown as Record<
    symbol,
    Record<string, unknown> | undefined
  >;
  const slots = g[STATE] ??= {};
  return (slots[name] ??= make()) as T;
}
