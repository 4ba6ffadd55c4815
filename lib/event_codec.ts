/**
 * How an event is encoded: the `payload` column (everything but the envelope) and the envelope+payload JSON that
 * browsers, the REST API and the event streams get, rebuilt from a row without parsing its payload.
 */
import type { AgentEvent, StoredEvent } from "./protocol.ts";
import { PROTOCOL_VERSION } from "./wire.ts";

/** One event's seq and its envelope+payload JSON, with the object it encodes when there is one at hand. */
export interface EncodedEvent {
  seq: number;
  json: string;
  /** The event as an object, as `json` encodes it (kept so in-process followers need not parse `json`). */
  event?: Readonly<StoredEvent>;
}

/** A row of the events table. */
export interface EventRow {
  sessionId: string;
  seq: number;
  ts: number;
  type: string;
  payload: string;
}

/** Encode an event as browsers and the REST API see it: the whole envelope plus payload. */
function encodeEvent(event: AgentEvent): string {
  const ts = Math.trunc(event.ts);
  return eventJson({
    sessionId: event.sessionId,
    seq: event.seq,
    ts,
    type: event.type,
    payload: payloadOf(event),
  });
}

/**
 * An event with its JSON and its object form (the parsed event itself: no copy unless `ts` has a fraction).
 * @param cut its encoding cut from the text it arrived in (`cutFrom`), when there is one.
 */
export function encodedEvent(event: AgentEvent, cut?: Encoding): EncodedEvent {
  return { seq: event.seq, json: cut?.json ?? encodeEvent(event), event: storedForm(event) };
}

/** What an event is stored as (`payload`) and served as (`json`: envelope and payload). */
export interface Encoding {
  payload: string;
  json: string;
}

/**
 * An event's encoding cut from `text[start, end)`, the text it was parsed from, rather than made again: under
 * ingest load, encoding was a tenth of the daemon's time. Only when the text begins with the envelope laid out
 * as encoding lays it out, as the plugin sends every event; the rest is the payload as sent, which reads back
 * as what encoding would give. The caller vouches that `event` is that text's JSON.parse, untouched (no
 * default filled in), and that the text has no whitespace outside its strings.
 * @returns undefined when the text is laid out otherwise, or `ts` has a fraction (stored truncated).
 */
export function cutFrom(event: AgentEvent, text: string, start: number, end: number): Encoding | undefined {
  if (!Number.isSafeInteger(event.ts)) return undefined;
  const at = envelopeEnd(event, text, start);
  if (at < 0) return undefined;
  const json = start === 0 && end === text.length ? text : text.slice(start, end);
  const next = text.charCodeAt(at);
  if (next === 44) return { payload: "{" + text.slice(at + 1, end), json }; // ','
  return next === 125 && at === end - 1 ? { payload: "{}", json } : undefined; // '}'
}

const ENVELOPE_START = `{"v":${PROTOCOL_VERSION},"sessionId":"`;

/**
 * Where the envelope of `event` ends in its text at `start`: after the type, when the five envelope keys come
 * first and in the order `eventJson` writes them (lib/event_codec_test.ts holds the two to each other); -1
 * otherwise. Read without building the expected text, which cost as much as the encoding
 * it saves: the strings must be as long as their values (nothing in them escaped) and the numbers plain digits,
 * as JSON.stringify writes a safe integer. (A payload that names an envelope key again is read back with the
 * value JSON.parse took, the last one: the text still reads as the event.)
 */
function envelopeEnd(event: AgentEvent, text: string, start: number): number {
  if (!text.startsWith(ENVELOPE_START, start)) return -1;
  let i = start + ENVELOPE_START.length + event.sessionId.length;
  if (text.charCodeAt(i) !== 34 || !text.startsWith(',"seq":', i + 1)) return -1;
  i = afterDigits(text, i + 8);
  if (!text.startsWith(',"ts":', i)) return -1;
  i = afterDigits(text, i + 6);
  if (!text.startsWith(',"type":"', i)) return -1;
  i += 9 + event.type.length;
  return text.charCodeAt(i) === 34 ? i + 1 : -1;
}

/** The index after the run of digits at `i` (`i` itself when there is none). */
function afterDigits(text: string, i: number): number {
  for (let c = text.charCodeAt(i); c >= 48 && c <= 57; c = text.charCodeAt(++i));
  return i;
}

/** The event as stored and served: `ts` in whole milliseconds (the parsed object itself when it already is). */
export function storedForm(event: AgentEvent, ts = Math.trunc(event.ts)): StoredEvent {
  return (event.ts === ts ? event : { ...event, ts }) as StoredEvent;
}

/**
 * Payloads encoded for a first store that a second one will store too (a replica writes each event to the
 * shared database and then to its copy): kept with the event object, so the copy does not encode it again.
 */
const keptPayloads = new WeakMap<AgentEvent, string>();

/**
 * The payload part of an event: everything but the envelope, as stored in `events.payload`.
 * @param keep remember it for the next call with this event object (see `keptPayloads`).
 */
export function payloadOf(event: AgentEvent, keep = false): string {
  const kept = keptPayloads.get(event);
  if (kept !== undefined) return kept;
  // Rest destructuring copies the other keys in one step, in their order: half the cost of a filtered loop.
  const { v: _v, sessionId: _id, seq: _seq, ts: _ts, type: _type, ...payload } = event as Record<
    string,
    unknown
  >;
  const text = JSON.stringify(payload);
  if (keep) keptPayloads.set(event, text);
  return text;
}

/** Rebuild the envelope+payload JSON of a row without parsing the payload. */
export function eventJson(row: EventRow): string {
  const head = `{"v":${PROTOCOL_VERSION},"sessionId":${
    JSON.stringify(row.sessionId)
  },"seq":${row.seq},"ts":${row.ts},"type":${JSON.stringify(row.type)}`;
  return row.payload === "{}" ? head + "}" : head + "," + row.payload.slice(1);
}
