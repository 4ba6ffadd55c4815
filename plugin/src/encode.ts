/**
 * Frames as JSON text that the daemon will take: never over its size limit.
 */
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
