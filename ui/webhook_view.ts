/** What the webhooks page shows of endpoints and attempts, in words. */
import type { AttemptRow } from "./types.ts";

/** A time as `2026-12-01 13:45:07` (UTC). */
export function when(ms: number): string {
  return new Date(ms).toISOString().replace("T", " ").slice(0, 19);
}

/** The URL without its query: a receiver's key may sit there, and this page may be on a shared screen. */
export function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}${u.search ? "?…" : ""}`;
  } catch {
    return url;
  }
}

/** One attempt in words: status (or the error) and latency, and whether it will be tried again. */
export function attemptText(a: AttemptRow): string {
  const result = a.status === null ? (a.error ?? "no answer") : `HTTP ${a.status}`;
  const state = a.state === "pending" ? ", will retry" : a.state === "failed" ? ", gave up" : "";
  return `${result} in ${a.latencyMs} ms${state}`;
}

/** The chip class of an attempt: done (2xx), pending (to be retried) or error. */
export function attemptClass(a: AttemptRow): string {
  if (a.status !== null && a.status >= 200 && a.status < 300) return "done";
  return a.state === "pending" ? "pending" : "error";
}

/** A GitLab hook secret: 32 random bytes as hex (GitLab takes any string; this one needs no escaping). */
export function randomSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}
