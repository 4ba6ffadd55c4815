/**
 * Frames as JSON text that the daemon will take: never over its size limit.
 */
import { PROTOCOL_VERSION } from "../../lib/wire.ts";
import { MAX_FRAME_CHARS } from "./constants.ts";
import { clip } from "./mapping.ts";

/** JSON for one frame, its strings shrunk (never the JSON itself) when it would exceed the frame limit. */
export function encode(frame: object): string {
  let s = JSON.stringify(frame);
  for (const n of [20_000, 200]) {
    if (s.length <= MAX_FRAME_CHARS) break;
    s = JSON.stringify(
      frame,
      (_k, v) => (typeof v === "string" ? clip(v, n) : v),
    );
  }
  return s;
}

/**
 * A `batch` frame of the unsent events `next(0)`, `next(1)`, …: as many as fit under the frame limit, at
 * most `maxEvents`. Each event is encoded as it would be on its own, so the daemon sees the same frames.
 * @returns the frame's text and how many events it carries (at least one)
 */
export function encodeBatch(
  sessionId: string,
  next: (i: number) => object | undefined,
  maxEvents: number,
): { text: string; count: number } {
  const head = `{"v":${PROTOCOL_VERSION},"type":"batch","sessionId":${
    JSON.stringify(sessionId)
  },"seq":0,"ts":${Date.now()},"events":[`;
  const parts: string[] = [];
  let chars = head.length + 2;
  for (let i = 0; i < maxEvents; i++) {
    const ev = next(i);
    if (!ev) break;
    const part = encode(ev);
    // One event always goes (encode keeps it under the limit on its own; the envelope is small).
    if (parts.length && chars + part.length + 1 > MAX_FRAME_CHARS) break;
    parts.push(part);
    chars += part.length + 1;
  }
  return { text: `${head}${parts.join(",")}]}`, count: parts.length };
}
