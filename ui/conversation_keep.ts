/**
 * After a conversation is rebuilt from its events (an older page prepended, a gap merged), the items and tool
 * calls that show the same thing as before stay the same objects. The session page's MessageItem skips
 * rendering by identity (its item and each of its calls), so only what the rebuild really changed renders
 * again: a page of 300 older events renders its ~100 new messages, not the whole conversation. Tool calls
 * matter as much as items: half the messages hold one, and a new call object renders its message again.
 */
import type { Conversation, Item, ToolCall } from "./conversation_state.ts";

/**
 * `next` with every item (by key) and tool call (by id) equal in content to one of `prev` replaced by it.
 * @param prev the conversation before the rebuild (not mutated)
 * @param next the rebuilt conversation (its `items` and `tools` are replaced, not mutated)
 */
export function keepUnchanged(prev: Conversation, next: Conversation): Conversation {
  const tools: Record<string, ToolCall> = {};
  for (const id of next.toolOrder) {
    const was = prev.tools[id];
    const now = next.tools[id];
    tools[id] = was && same(was, now) ? was : now;
  }
  const before = new Map<string, Item>(prev.items.map((i) => [i.key, i]));
  const items = next.items.map((i) => {
    const was = before.get(i.key);
    return was && same(was, i) ? was : i;
  });
  return { ...next, items, tools };
}

/**
 * Equal content: the same value, or arrays / plain objects whose members are. Event payloads inside (a call's
 * `details`, a run's usage) are the held events' own objects, so an unchanged one is found at the first `===`.
 */
function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((v, i) => same(v, b[i]));
  if (Array.isArray(b)) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  const ra = a as Record<string, unknown>, rb = b as Record<string, unknown>;
  return ka.every((k) => k in rb && same(ra[k], rb[k]));
}
