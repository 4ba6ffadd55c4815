/**
 * The lvmh wire protocol, version 1: one zod schema per frame and body, one parse function per boundary.
 * PROTOCOL.md describes the same set of messages in prose; `protocol_doc_test.ts` keeps the two in step.
 * Types are inferred from the schemas and never written twice. The schemas live by transport under
 * `lib/protocol/` (shared shapes, the plugin socket, REST, the browser socket); this module is what everyone
 * imports: all of them, plus the parse functions.
 */
import { z } from "zod";
import { PROTOCOL_VERSION } from "./wire.ts";
import { type FrameLayout, hotShape, MAX_JSON_DEPTH, nestsDeeper } from "./frame_precheck.ts";
import { AgentEvent, DaemonFrame, type ErrorCode, PluginFrame } from "./protocol/plugin.ts";
import { BrowserFrame, serverFrameTypes } from "./protocol/browser.ts";

export { MAX_JSON_DEPTH, nestsDeeper } from "./frame_precheck.ts";
export {
  CloseCode,
  Feature,
  FieldMax,
  MAX_BATCH_EVENTS,
  MAX_BODY_BYTES,
  MAX_FRAME_BYTES,
  MAX_PROMPT_CHARS,
  PROTOCOL_VERSION,
  SESSION_ID_RE,
} from "./wire.ts";
export * from "./protocol/shapes.ts";
export * from "./protocol/plugin.ts";
export * from "./protocol/rest.ts";
export * from "./protocol/browser.ts";
export * from "./protocol/search.ts";

// ---------------------------------------------------------------------------------------------
// Parsing

/** Result of parsing one boundary input: the value, or a short message saying what was wrong. */
export type Parsed<T> = { ok: true; value: T } | { ok: false; code: ErrorCode; message: string };

function describe(error: z.ZodError): string {
  const issue = error.issues[0];
  const path = issue.path.length ? issue.path.join(".") + ": " : "";
  return `${path}${issue.message}`;
}

/**
 * A plugin frame parsed. `eventsAt`, when present, says where its events sit in the text, as `[start, end)`
 * pairs: the whole text for an event frame, each element for a `batch`. It is there only when the value is the
 * parsed JSON itself (a hot shape, lib/frame_precheck.ts), so that text is exactly what the objects hold.
 */
export type ParsedPluginFrame = Parsed<PluginFrame> & { eventsAt?: readonly number[] };

/** Parse one text frame from a plugin: JSON, an object, version 1, then the schema. Never throws. */
export function parsePluginFrame(text: string): ParsedPluginFrame {
  const layout: FrameLayout = { compact: true, objects: [] };
  let eventsAt: readonly number[] | undefined;
  const parsed = parseFrame(text, PluginFrame, (raw) => {
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
      return { ok: false, code: "bad_frame", message: "frame must be a JSON object" };
    }
    const v = (raw as { v?: unknown }).v;
    if (v !== PROTOCOL_VERSION) {
      return { ok: false, code: "bad_version", message: `unsupported protocol version ${JSON.stringify(v)}` };
    }
    // The hot shapes are used as parsed (lib/frame_precheck.ts); the rest goes through the schema.
    const hot = hotShape(raw as Record<string, unknown>);
    if (hot === null) return null;
    // Where its events sit, so their payloads are cut from the text (lib/event_codec.ts `cutFrom`): only in a
    // text laid out as the plugin writes it, and a batch whose every event is an object the scan saw.
    if (layout.compact) {
      if (hot === "event") eventsAt = [0, text.length];
      else if (hot === "batch") {
        const events = (raw as { events: unknown[] }).events;
        if (layout.objects.length === 2 * events.length) eventsAt = layout.objects;
      }
    }
    return { ok: true, value: raw as PluginFrame };
  }, layout);
  return parsed.ok && eventsAt ? { ...parsed, eventsAt } : parsed;
}

/** Validate one event of a `batch` (or alone) as `AgentEvent`; the hot shapes take the fast path. */
export function parseAgentEvent(
  raw: unknown,
): { ok: true; value: AgentEvent } | { ok: false; message: string } {
  const hot = typeof raw === "object" && raw !== null ? hotShape(raw as Record<string, unknown>) : null;
  return hot === "event" ? { ok: true, value: raw as AgentEvent } : parseWith(AgentEvent, raw);
}

/** Parse one text frame from a browser. Never throws. */
export function parseBrowserFrame(text: string): Parsed<BrowserFrame> {
  return parseFrame(text, BrowserFrame);
}

/** @param layout passed on to `nestsDeeper`, which notes in it where the events of a batch sit. */
function parseFrame<T>(
  text: string,
  schema: z.ZodType<T>,
  precheck: (raw: unknown) => Parsed<T> | null = () => null,
  layout?: FrameLayout,
): Parsed<T> {
  if (nestsDeeper(text, MAX_JSON_DEPTH, layout)) {
    return { ok: false, code: "bad_frame", message: `frame nests deeper than ${MAX_JSON_DEPTH} levels` };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { ok: false, code: "bad_json", message: "frame is not valid JSON" };
  }
  const early = precheck(raw);
  if (early) return early;
  const result = schema.safeParse(raw);
  return result.success
    ? { ok: true, value: result.data }
    : { ok: false, code: "bad_frame", message: describe(result.error) };
}

/** Parse any REST input against a schema, describing the first problem. Never throws. */
export function parseWith<T>(schema: z.ZodType<T>, input: unknown): { ok: true; value: T } | {
  ok: false;
  message: string;
} {
  const result = schema.safeParse(input);
  return result.success ? { ok: true, value: result.data } : { ok: false, message: describe(result.error) };
}

/** Every message type in the protocol, by direction; PROTOCOL.md must name exactly these. */
export const MESSAGE_TYPES = {
  pluginToDaemon: PluginFrame.options.map((o) => o.shape.type.value),
  daemonToPlugin: DaemonFrame.options.map((o) => o.shape.type.value),
  browserToDaemon: BrowserFrame.options.map((o) => o.shape.type.value),
  daemonToBrowser: serverFrameTypes,
};
