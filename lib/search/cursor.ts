/**
 * The `next` cursor of a search page. Pages of one search must not shift while events are stored, and
 * indexed, as a person pages on: the cursor fixes where the first page stood, as opaque text the client
 * hands back and the daemon checks.
 */
import { InvalidError } from "../errors.ts";
import { RANKED_WINDOW } from "./ranked_hits.ts";

/**
 * Where a page starts: the events as they were at the first page (`top`, and `upto` indexed), the highest
 * rowid of the unindexed ones not yet read (`tail`; `upto` once they all were), and how many of the index's
 * hits were shown.
 */
export interface Cursor {
  top: number;
  upto: number;
  tail: number;
  offset: number;
}

export function encodeCursor(cursor: Cursor): string {
  return btoa(`${cursor.top}:${cursor.upto}:${cursor.tail}:${cursor.offset}`).replaceAll("=", "");
}

/** @throws {InvalidError} when the text is not a cursor this index made. */
export function decodeCursor(text: string): Cursor {
  let plain = "";
  try {
    plain = atob(text);
  } catch {
    // Not base64: reported below.
  }
  const match = /^(\d{1,15}):(\d{1,15}):(\d{1,15}):(\d{1,6})$/.exec(plain);
  if (!match || Number(match[4]) >= RANKED_WINDOW) {
    throw new InvalidError("before: not a cursor of this search");
  }
  return { top: Number(match[1]), upto: Number(match[2]), tail: Number(match[3]), offset: Number(match[4]) };
}
