/**
 * One delivery attempt: a signed JSON POST with a deadline, redirects refused (so a secret-bearing request never
 * lands on a host the admin did not name) and the response body read only up to a cap.
 */
import { sign } from "./signing.ts";

/** Cap on how much of a response body is read (it is only logged, never parsed). */
export const MAX_RESPONSE_BYTES = 16 * 1024;

/** What one attempt came to. */
export interface AttemptResult {
  status: number | null;
  latencyMs: number;
  error: string | null;
  ok: boolean;
}

/**
 * POST `body` to `url`, signed with `secret` under `id`. Never throws: network errors, timeouts and
 * redirects come back as a failed attempt.
 */
export async function attempt(
  target: { url: string; secret: string },
  id: string,
  body: string,
  options: { timeoutMs: number; fetch?: typeof fetch; signal?: AbortSignal },
): Promise<AttemptResult> {
  const started = performance.now();
  const timestamp = Math.floor(Date.now() / 1000);
  const latency = () => Math.round(performance.now() - started);
  try {
    const res = await (options.fetch ?? fetch)(target.url, {
      method: "POST",
      redirect: "manual",
      signal: options.signal
        ? AbortSignal.any([options.signal, AbortSignal.timeout(options.timeoutMs)])
        : AbortSignal.timeout(options.timeoutMs),
      headers: {
        "content-type": "application/json",
        "user-agent": "lvmh-webhooks",
        "webhook-id": id,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": await sign(target.secret, id, timestamp, body),
      },
      body,
    });
    const text = await readCapped(res);
    const ok = res.status >= 200 && res.status < 300;
    const error = ok
      ? null
      : res.status >= 300 && res.status < 400
      ? `redirect to ${res.headers.get("location") ? "another location" : "nowhere"} refused`
      : `HTTP ${res.status}${text ? `: ${text.slice(0, 200)}` : ""}`;
    return { status: res.status, latencyMs: latency(), error, ok };
  } catch (error) {
    const e = error as Error;
    const message = e.name === "TimeoutError" ? `no answer within ${options.timeoutMs} ms` : e.message;
    return { status: null, latencyMs: latency(), error: message.slice(0, 300), ok: false };
  }
}

/** Read at most `MAX_RESPONSE_BYTES` of a body, then cancel the rest. */
async function readCapped(res: Response): Promise<string> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let n = 0;
  try {
    while (n < MAX_RESPONSE_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      n += value.length;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  const all = new Uint8Array(Math.min(n, MAX_RESPONSE_BYTES));
  let off = 0;
  for (const c of chunks) {
    const part = c.subarray(0, all.length - off);
    all.set(part, off);
    off += part.length;
  }
  return new TextDecoder().decode(all);
}
