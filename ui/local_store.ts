/**
 * This browser's Web Storage, as the page keeps its token, watch list and "last seen" seqs in it: shared by
 * every tab of the origin. Each reader takes a `LocalStore` parameter defaulting to `localStore()`, so tests
 * pass an in-memory one.
 */

/** The part of `Storage` the page uses. */
export type LocalStore = Pick<Storage, "getItem" | "setItem" | "removeItem">;

/** `localStorage`, or null where storage is disabled (privacy mode): callers then work without memory. */
export function localStore(): LocalStore | null {
  try {
    return globalThis.localStorage ?? null;
  } catch {
    return null;
  }
}
