/**
 * The shape of a Standard Webhooks secret, with no runtime dependency: `lib/protocol/rest.ts` validates bodies
 * with it, and that module is in the browser bundle's import graph.
 */

/** What every secret starts with. */
export const SECRET_PREFIX = "whsec_";

/** True when `secret` is a `whsec_` secret whose key is 24 to 64 bytes of base64. */
export function isSecret(secret: string): boolean {
  if (!secret.startsWith(SECRET_PREFIX)) return false;
  const raw = secret.slice(SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(raw)) return false;
  // Each base64 character carries 6 bits; padding carries none.
  const n = Math.floor((raw.replace(/=+$/, "").length * 6) / 8);
  return n >= 24 && n <= 64;
}
