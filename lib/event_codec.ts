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

/** An event with its JSON and its object form (the parsed event itself: no copy unless `ts` has a fraction). */
export function encodedEvent(event: AgentEvent): EncodedEvent {
  return { seq: event.seq, json: encodeEvent(event), event: storedForm(event) };
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
