/**
 * What a frame is checked for before (or instead of) its zod schema in lib/protocol.ts.
 *
 * The size check (both sockets) and the depth scan run before JSON.parse. The hot shapes: under ingest load zod cost ~1 µs per event plus a
 * deep copy of it for the collector; the shapes that make up nearly all traffic (streamed deltas, whole
 * messages, tool output, batches) are checked by hand here and the parsed object is used as it is. Only an
 * input that satisfies the schema with nothing to fill in is accepted, so the result equals zod's (key order
 * aside); anything else (a missing field that has a default, images, a wrong type) falls through to the
 * schema, which also words the error. lib/protocol_fast_test.ts compares both paths.
 */
import { FieldMax, MAX_BATCH_EVENTS, MAX_FRAME_BYTES, PROTOCOL_VERSION, SESSION_ID_RE } from "./wire.ts";

const encoder = new TextEncoder();
let scratch = new Uint8Array(0);

/**
 * True when a text frame is over the byte limit, without allocating: a hostile peer's 10 MB frames were each
 * encoded again just to be measured. Every UTF-16 unit is at least one UTF-8 byte and at most three.
 */
export function tooBig(text: string, limit = MAX_FRAME_BYTES): boolean {
  if (text.length > limit) return true;
  if (text.length * 3 <= limit) return false;
  if (scratch.length < limit + 4) scratch = new Uint8Array(limit + 4);
  const { read, written } = encoder.encodeInto(text, scratch.subarray(0, limit + 4));
  return read < text.length || written > limit;
}

/** Deepest nesting of arrays and objects a frame may have; no frame of the protocol comes near it. */
export const MAX_JSON_DEPTH = 64;

/** What `nestsDeeper` notes of a frame's layout on its way, when asked (where a batch's events sit). */
export interface FrameLayout {
  /** No whitespace outside strings: the text is laid out as JSON.stringify writes it. */
  compact: boolean;
  /**
   * Where the objects inside the frame's one member that is an array or an object (a batch's `events`) begin
   * and end: `[start, end)` pairs, in order. Empty when the frame has no such member or more than one, so an
   * offset can never point into another member.
   */
  objects: number[];
}

/**
 * True when `text` nests arrays/objects deeper than `max` (brackets inside strings do not count). Checked before
 * JSON.parse: a 10,000-deep frame took V8 ~540 µs to parse (25× a flat frame of its size), this ~20 µs; on a
 * 60 KB batch it adds ~0.3 µs per event, since strings, most of a frame, are skipped with indexOf.
 * @param layout filled in by the same scan when given (what is in it is meaningful only when this is false).
 */
export function nestsDeeper(text: string, max = MAX_JSON_DEPTH, layout?: FrameLayout): boolean {
  let depth = 0;
  let members = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) { // '"': jump to the closing quote, one not escaped by an odd run of backslashes
      let j = i;
      for (;;) {
        j = text.indexOf('"', j + 1);
        if (j < 0) return false; // unterminated: JSON.parse says so
        let k = j - 1;
        while (text.charCodeAt(k) === 92) k--;
        if ((j - 1 - k) % 2 === 0) break;
      }
      i = j;
    } else if (c === 91 || c === 123) { // '[' '{'
      if (++depth > max) return true;
      if (layout && depth <= 3) {
        if (depth === 2) members++;
        else if (depth === 3 && c === 123) layout.objects.push(i);
      }
    } else if (c === 93 || c === 125) { // ']' '}'
      if (layout && depth === 3 && c === 125) layout.objects.push(i + 1);
      depth--;
    } else if (c <= 32 && layout) layout.compact = false;
  }
  if (layout && members !== 1) layout.objects.length = 0;
  return false;
}

const isStr = (x: unknown, max = Infinity): x is string => typeof x === "string" && x.length <= max;
const isSeq = (x: unknown): x is number => typeof x === "number" && Number.isSafeInteger(x) && x >= 0;
const isStrOrNull = (x: unknown) => x === null || typeof x === "string";
const isPlain = (x: unknown): x is Record<string, unknown> =>
  typeof x === "object" && x !== null && !Array.isArray(x);
const MESSAGE_ROLES = new Set(["user", "assistant", "toolResult", "system"]);

function fastEnvelope(f: Record<string, unknown>): boolean {
  return f.v === PROTOCOL_VERSION && isStr(f.sessionId, 128) && SESSION_ID_RE.test(f.sessionId) &&
    isSeq(f.seq) && typeof f.ts === "number" && Number.isFinite(f.ts);
}

function fastMessage(m: unknown): boolean {
  if (!isPlain(m) || !MESSAGE_ROLES.has(m.role as string) || !isStr(m.id, FieldMax.messageId)) return false;
  if (typeof m.text !== "string" || !isStrOrNull(m.thinking) || !isStrOrNull(m.toolCallId)) return false;
  if (m.images !== undefined || !Array.isArray(m.toolCalls)) return false;
  for (const c of m.toolCalls) {
    if (
      !isPlain(c) || typeof c.id !== "string" || typeof c.name !== "string" || typeof c.argsJson !== "string"
    ) {
      return false;
    }
  }
  return true;
}

/** `agent_end`'s `usage`: each count absent, or a finite number ≥ 0 (what zod's `number()` takes). */
function fastUsage(u: unknown): boolean {
  if (!isPlain(u)) return false;
  for (const k of ["inputTokens", "outputTokens", "totalCost"]) {
    const x = u[k];
    if (x !== undefined && !(typeof x === "number" && Number.isFinite(x) && x >= 0)) return false;
  }
  return true;
}

/**
 * Whether a parsed frame is one of the hot shapes that satisfies the schema as it is: an `event`
 * (`message_update`, `message_end`, `tool_execution_update`, and a run's `agent_start`, `message_start`,
 * `agent_end`, `agent_settled`), a `batch`, or a `ping` (`frame`: neither an event nor a batch; with 3,000
 * sessions connected most frames are the plugins' pings, 600 a second); null sends it to the schema.
 */
export function hotShape(f: Record<string, unknown>): "event" | "batch" | "frame" | null {
  if (!fastEnvelope(f)) return null;
  switch (f.type) {
    case "message_update":
      return typeof f.delta === "string" &&
          (f.kind === undefined || f.kind === "text" || f.kind === "thinking")
        ? "event"
        : null;
    case "message_end":
      return f.from === undefined && fastMessage(f.message) ? "event" : null;
    case "tool_execution_update":
      return isStr(f.toolCallId) && isStr(f.toolName) && isStr(f.partial) ? "event" : null;
    case "message_start": {
      const m = f.message;
      return f.from === undefined && isPlain(m) && isStr(m.role, FieldMax.role) &&
          isStr(m.id, FieldMax.messageId)
        ? "event"
        : null;
    }
    case "agent_start":
    case "agent_settled":
      return "event";
    case "agent_end":
      // Without `usage` the schema fills in `{}`: that one goes to the schema.
      return fastUsage(f.usage) ? "event" : null;
    case "batch":
      return f.seq === 0 && Array.isArray(f.events) && f.events.length >= 1 &&
          f.events.length <= MAX_BATCH_EVENTS
        ? "batch"
        : null;
    case "ping":
      return f.seq === 0 ? "frame" : null;
    default:
      return null;
  }
}
