/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): `whsec_` secrets, and
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">` keyed with the secret's decoded bytes.
 */
import { Buffer } from "node:buffer";
import { timingSafeEqual } from "node:crypto";
import { SECRET_PREFIX } from "./secret_format.ts";

export { isSecret } from "./secret_format.ts";

/** A new random secret: `whsec_` and 24 random bytes in base64. */
export function generateSecret(): string {
  return SECRET_PREFIX + Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString("base64");
}

async function hmac(secret: string, content: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    Buffer.from(secret.slice(SECRET_PREFIX.length), "base64"),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(content));
  return Buffer.from(mac).toString("base64");
}

/** The `webhook-signature` value for one attempt. */
export async function sign(secret: string, id: string, timestamp: number, body: string): Promise<string> {
  return `v1,${await hmac(secret, `${id}.${timestamp}.${body}`)}`;
}

/**
 * Check a received delivery's headers against `secret` (receivers and tests): any listed `v1` signature
 * matches, compared in constant time, and the timestamp is within `toleranceSec` of now.
 */
export async function verify(
  secret: string,
  headers: Headers,
  body: string,
  options: { toleranceSec?: number; now?: number } = {},
): Promise<boolean> {
  const id = headers.get("webhook-id");
  const ts = Number(headers.get("webhook-timestamp"));
  const sigs = headers.get("webhook-signature");
  if (!id || !Number.isInteger(ts) || !sigs) return false;
  const now = Math.floor((options.now ?? Date.now()) / 1000);
  if (Math.abs(now - ts) > (options.toleranceSec ?? 300)) return false;
  const want = Buffer.from((await sign(secret, id, ts, body)).slice(3));
  return sigs.split(" ").some((s) => {
    if (!s.startsWith("v1,")) return false;
    const got = Buffer.from(s.slice(3));
    return got.length === want.length && timingSafeEqual(got, want);
  });
}
