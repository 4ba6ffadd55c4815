/**
 * What a kept prompt's delivery (prompt_delivery.ts alone, shared_delivery.ts with replicas) hears of a plugin's
 * `hello`: the features it lists, and the prompts waiting for it, since a prompt sent to a socket that went is
 * sent again on the session's next one.
 */

/** The features a hello lists, bounded: a plugin lists a few short names, and only known ones are asked about. */
export function listedFeatures(features: unknown): string[] {
  return Array.isArray(features)
    ? features.slice(0, 32).filter((f): f is string => typeof f === "string" && f.length <= 64)
    : [];
}

/** The calls waiting for each session's next hello. */
export class HelloWaits {
  #waits = new Map<string, Set<() => void>>();

  /** Call `again` at the session's next hello (and each after, until removed). @returns its removal */
  on(sessionId: string, again: () => void): () => void {
    let calls = this.#waits.get(sessionId);
    if (!calls) this.#waits.set(sessionId, calls = new Set());
    calls.add(again);
    return () => {
      calls.delete(again);
      if (!calls.size && this.#waits.get(sessionId) === calls) this.#waits.delete(sessionId);
    };
  }

  /** The session's plugin said hello. */
  hello(sessionId: string): void {
    for (const again of [...this.#waits.get(sessionId) ?? []]) again();
  }
}
