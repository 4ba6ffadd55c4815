/**
 * A value that changes over time and tells its listeners: what the page's live connection publishes (session
 * directory, approvals, spawn jobs, socket state) so islands in separate trees read the same state.
 */

/** A readable, subscribable value. */
export interface Topic<T> {
  get(): T;
  /**
   * Call `cb` with every new value (not the current one: read it with `get()`).
   * @returns a function that stops listening
   */
  subscribe(cb: (value: T) => void): () => void;
}

/** A topic its owner can set. */
export interface WritableTopic<T> extends Topic<T> {
  set(value: T): void;
}

/**
 * Make a topic holding `initial`.
 * @param initial the value until the first `set`
 */
export function createTopic<T>(initial: T): WritableTopic<T> {
  let value = initial;
  const listeners = new Set<(value: T) => void>();
  return {
    get: () => value,
    set(next) {
      value = next;
      // A copy: a listener may unsubscribe (or subscribe another) while being called.
      for (const cb of [...listeners]) cb(next);
    },
    subscribe(cb) {
      listeners.add(cb);
      return () => listeners.delete(cb);
    },
  };
}
