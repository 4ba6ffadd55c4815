/**
 * `tail -f`: follow a session's SSE stream, reconnecting with Last-Event-ID through daemon restarts, network
 * outages, a silent stream and a proxy's 5xx, so no event is shown twice or skipped.
 */
import process from "node:process";
import type { Config } from "./config.ts";
import { CliError } from "./errors.ts";
import { enc, headersFor, refusal, unreachable } from "./http.ts";
import type { CliEvent } from "./render.ts";
import { createSseParser } from "./sse.ts";

/** A stream silent for this long (the daemon sends a comment every 15 s) counts as dead. */
const STALL_MS = 45_000;
const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 5000;

/**
 * Follow a session's stream; resolves when the session is deleted. The first connection failing is an error
 * (3 unreachable, 1 refused); later ones are retried.
 * @param initialQuery the first request's query (`?after=N`, or "" for the latest page)
 */
export async function follow(
  cfg: Config,
  id: string,
  initialQuery: string,
  onEvent: (e: CliEvent) => void,
): Promise<void> {
  let lastId: string | null = null;
  let connected = false;
  let delay = RETRY_MIN_MS;
  let notified = false;
  while (true) {
    const abort = new AbortController();
    let stall: ReturnType<typeof setTimeout> | undefined;
    const arm = () => {
      clearTimeout(stall);
      stall = setTimeout(() => abort.abort(), STALL_MS);
    };
    try {
      arm();
      const headers = headersFor(cfg, { accept: "text/event-stream" });
      if (lastId !== null) headers["last-event-id"] = lastId;
      let res: Response;
      try {
        res = await fetch(
          `${cfg.url}/api/sessions/${enc(id)}/stream${lastId === null ? initialQuery : ""}`,
          {
            headers,
            signal: abort.signal,
          },
        );
      } catch (error) {
        if (!connected) throw unreachable(cfg, error);
        throw error;
      }
      if (!res.ok) {
        // Once following, a 5xx or 429 is the daemon (or a proxy in front of it) not back yet: retry.
        if (connected && (res.status >= 500 || res.status === 429)) {
          await res.body?.cancel();
          throw new Error(`HTTP ${res.status}`);
        }
        throw await refusal(res);
      }
      // Until a persisted event is shown (a session without events yet), a reconnect asks for all from the
      // start: the latest page again could skip what came meanwhile.
      if (lastId === null && !initialQuery) initialQuery = "?after=0";
      connected = true;
      delay = RETRY_MIN_MS;
      if (notified) process.stderr.write("lvmh: reconnected\n");
      notified = false;
      let deleted = false;
      const parse = createSseParser((msg) => {
        if (msg.event === "session_deleted") deleted = true;
        else {
          if (msg.id !== null && msg.id !== "") lastId = msg.id;
          onEvent(JSON.parse(msg.data));
        }
      });
      const decoder = new TextDecoder();
      for await (const chunk of res.body!) {
        arm();
        parse(decoder.decode(chunk, { stream: true }));
        if (deleted) {
          process.stderr.write(`lvmh: session ${id} was deleted\n`);
          return;
        }
      }
    } catch (error) {
      if (error instanceof CliError) throw error;
    } finally {
      clearTimeout(stall);
      abort.abort();
    }
    if (!notified) {
      process.stderr.write("lvmh: connection lost, reconnecting…\n");
    }
    notified = true;
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(RETRY_MAX_MS, delay * 2);
  }
}
