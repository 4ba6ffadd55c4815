/**
 * List, then watch from the list's resourceVersion, for as long as the signal allows:
 * - each line of the chunked answer is one event; a `BOOKMARK` only moves the resourceVersion on;
 * - a 410 (too old a resourceVersion) relists, whether it comes as an `ERROR` event inside a 200 (the
 *   watch cache's way) or as a bare HTTP 410;
 * - a stream that ends (the server's `timeoutSeconds`) watches again at once from the last version seen;
 * - one that drops, or any other error, watches again from there after a backoff (doubling, capped).
 * resourceVersions are opaque: only stored and sent back, never compared.
 */
import type { KubeClient, KubeStatus } from "./client.ts";

/** The metadata every listed object has. */
export interface KubeObject {
  metadata: { name: string; resourceVersion?: string; [k: string]: unknown };
}

/** One change the watch saw. */
export type WatchEvent<T> = { type: "ADDED" | "MODIFIED" | "DELETED"; object: T };

/** What the loop reports. */
export interface WatchHandlers<T> {
  /** The whole current set (the first list, and every relist after a 410): replace what is cached. */
  onList(items: T[]): void;
  onEvent(event: WatchEvent<T>): void;
  /** A failure the loop gets past by itself (logged by the caller, at most once per streak). */
  onTrouble?(message: string): void;
}

/** Tuning; tests shorten the backoff. */
export interface WatchOptions {
  signal: AbortSignal;
  /** First backoff after a failure; doubles up to `maxBackoffMs`. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** Asked of the server per watch request (it ends the stream then). */
  timeoutSeconds?: number;
}

/** The list and watch query for a label selector, as a flat record (unit-tested). */
export function watchQuery(
  labelSelector: string,
  resourceVersion: string,
  timeoutSeconds: number,
): Record<string, string> {
  return {
    labelSelector,
    watch: "1",
    allowWatchBookmarks: "true",
    resourceVersion,
    timeoutSeconds: String(timeoutSeconds),
  };
}

/**
 * Run the loop until `signal` aborts. Resolves then; never rejects.
 * @param path the collection, e.g. `/api/v1/namespaces/lvmh/pods`.
 */
export async function listWatch<T extends KubeObject>(
  client: KubeClient,
  path: string,
  labelSelector: string,
  handlers: WatchHandlers<T>,
  o: WatchOptions,
): Promise<void> {
  const first = o.backoffMs ?? 250;
  const max = o.maxBackoffMs ?? 10_000;
  let backoff = first;
  let rv: string | null = null;
  const pause = async () => {
    await sleep(backoff, o.signal);
    backoff = Math.min(backoff * 2, max);
  };
  while (!o.signal.aborted) {
    try {
      if (rv === null) {
        const list = await client.json<{ metadata: { resourceVersion: string }; items: T[] }>("GET", path, {
          query: { labelSelector },
          signal: o.signal,
        });
        rv = list.metadata.resourceVersion;
        handlers.onList(list.items ?? []);
      }
      const res = await client.raw("GET", path, {
        query: watchQuery(labelSelector, rv, o.timeoutSeconds ?? 290),
        signal: o.signal,
      });
      if (res.status === 410) {
        await res.body?.cancel();
        rv = null;
        continue;
      }
      if (!res.ok || !res.body) {
        const text = await res.text().catch(() => "");
        handlers.onTrouble?.(`watch ${path}: HTTP ${res.status} ${text.slice(0, 200)}`);
        await pause();
        continue;
      }
      const outcome = await readEvents<T>(res.body, {
        onEvent: (event) => {
          backoff = first;
          const v = event.object.metadata?.resourceVersion;
          if (v) rv = v;
          handlers.onEvent(event);
        },
        onBookmark: (v) => rv = v,
      });
      if (outcome.kind === "gone") {
        rv = null;
      } else if (outcome.kind === "error") {
        handlers.onTrouble?.(`watch ${path}: ${outcome.message}`);
        await pause();
      }
      // "end": the server's timeout; watch again at once.
    } catch (error) {
      if (o.signal.aborted) break;
      handlers.onTrouble?.(`watch ${path}: ${(error as Error).message}`);
      await pause();
    }
  }
}

type Outcome = { kind: "end" } | { kind: "gone" } | { kind: "error"; message: string };

/** Read NDJSON events until the stream ends or says something other than a change. */
async function readEvents<T>(
  body: ReadableStream<Uint8Array>,
  on: { onEvent(event: WatchEvent<T>): void; onBookmark(rv: string): void },
): Promise<Outcome> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return { kind: "end" };
      buffer += decoder.decode(value, { stream: true });
      let nl;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, nl).trim();
        buffer = buffer.slice(nl + 1);
        if (!line) continue;
        const event = JSON.parse(line) as { type: string; object: unknown };
        if (event.type === "BOOKMARK") {
          const v = (event.object as KubeObject)?.metadata?.resourceVersion;
          if (v) on.onBookmark(v);
        } else if (event.type === "ERROR") {
          const status = event.object as KubeStatus;
          if (status?.code === 410) return { kind: "gone" };
          return { kind: "error", message: `${status?.reason ?? "Error"}: ${status?.message ?? ""}` };
        } else if (event.type === "ADDED" || event.type === "MODIFIED" || event.type === "DELETED") {
          on.onEvent(event as WatchEvent<T>);
        }
      }
    }
  } catch (error) {
    return { kind: "error", message: `the stream dropped: ${(error as Error).message}` };
  } finally {
    reader.cancel().catch(() => {});
  }
}

/** Wait `ms`, or less when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done);
  });
}
