/**
 * Small display formatters shared by the server render and the islands (pure, locale-independent so the server
 * and the browser produce the same text and hydration matches).
 */

/**
 * "just now", "5 min ago", "3 h ago", "2 d ago", or an ISO date for older times.
 * @param ts unix ms of the event; null gives "never"
 * @param now unix ms to measure from
 */
export function relativeTime(ts: number | null, now: number): string {
  if (ts === null) return "never";
  const s = Math.max(0, Math.round((now - ts) / 1000));
  if (s < 45) return "just now";
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.round(m / 60);
  if (h < 24) return `${h} h ago`;
  const d = Math.round(h / 24);
  if (d < 30) return `${d} d ago`;
  return new Date(ts).toISOString().slice(0, 10);
}

/** Token counts as people read them: 950, 12.3k, 4.1M. */
export function formatTokens(n: number): string {
  if (n < 1000) return String(Math.round(n));
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** A dollar cost with enough digits to tell small runs apart: $0.0042, $1.23. */
export function formatCost(usd: number): string {
  if (usd === 0) return "$0";
  return usd < 1 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

/** The last `keep` segments of a path, with "…/" in front when some were cut. */
export function shortPath(path: string, keep = 3): string {
  const parts = path.split("/").filter(Boolean);
  if (parts.length <= keep) return path;
  return "…/" + parts.slice(-keep).join("/");
}

/** Pretty-print a JSON text for display; text that is not JSON comes back unchanged. */
export function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** How an image is named where it cannot be shown: `image · PNG · 120 KB`. */
export function imageLabel(img: { mimeType: string; bytes: number }): string {
  const type = img.mimeType.replace(/^image\//, "").toUpperCase() || "IMAGE";
  const kb = img.bytes / 1024;
  const size = kb < 1
    ? `${img.bytes} B`
    : kb < 1024
    ? `${Math.round(kb)} KB`
    : `${(kb / 1024).toFixed(1)} MB`;
  return `image · ${type} · ${size}`;
}
