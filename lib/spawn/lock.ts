/**
 * Serialise work per key (one repository's cache): two spawns of one repository must not run git in
 * the same volume at once, while spawns of different repositories go in parallel.
 */

/** Runs `fn` once every earlier holder of `key` has settled, failed or not. */
export type KeyedLock = <T>(key: string, fn: () => Promise<T>) => Promise<T>;

/** Build a lock: a promise chain per key, dropped once its last holder settles. */
export function createKeyedLock(): KeyedLock {
  const tails = new Map<string, Promise<unknown>>();
  return function withLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const run = (tails.get(key) ?? Promise.resolve()).catch(() => {}).then(fn);
    tails.set(key, run);
    run.finally(() => tails.get(key) === run && tails.delete(key)).catch(() => {});
    return run;
  };
}
