/**
 * The encrypted Web Push request (RFC 8291 aes128gcm payload, RFC 8292 VAPID), built by the npm `web-push`
 * package's `generateRequestDetails()` and sent with `fetch`, so it runs on Deno without Node's `https` and
 * tests can point a subscription at a loopback push service.
 */
import webpush from "npm:web-push@3.6.7";

/** What `web-push` needs from it, typed here (the package ships no types). */
interface WebPushLib {
  generateVAPIDKeys(): { publicKey: string; privateKey: string };
  generateRequestDetails(
    subscription: { endpoint: string; keys: { p256dh: string; auth: string } },
    payload: string,
    options: Record<string, unknown>,
  ): { endpoint: string; method: string; headers: Record<string, string | number>; body: Uint8Array };
}
const lib = webpush as unknown as WebPushLib;

/** A new VAPID key pair (base64url P-256 keys). */
export function generateVapidKeys(): { publicKey: string; privateKey: string } {
  return lib.generateVAPIDKeys();
}

/** What one push needs. */
export interface PushTarget {
  endpoint: string;
  p256dh: string;
  auth: string;
}

/**
 * Encrypt `payload` for `target` and POST it to its push service.
 * @throws {Error} from `web-push` when the subscription's keys are malformed; network errors from `fetch`.
 */
export async function sendPush(
  target: PushTarget,
  payload: string,
  options: {
    vapid: { subject: string; publicKey: string; privateKey: string };
    ttlSec: number;
    urgency: "very-low" | "low" | "normal" | "high";
    topic?: string;
    timeoutMs?: number;
  },
): Promise<Response> {
  const details = lib.generateRequestDetails(
    { endpoint: target.endpoint, keys: { p256dh: target.p256dh, auth: target.auth } },
    payload,
    {
      vapidDetails: options.vapid,
      TTL: options.ttlSec,
      urgency: options.urgency,
      contentEncoding: "aes128gcm",
      ...(options.topic ? { topic: options.topic } : {}),
    },
  );
  const headers = new Headers();
  for (const [k, v] of Object.entries(details.headers)) {
    // fetch sets the length itself from the body.
    if (k.toLowerCase() !== "content-length") headers.set(k, String(v));
  }
  return await fetch(details.endpoint, {
    method: details.method,
    headers,
    body: new Uint8Array(details.body),
    redirect: "manual",
    signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
  });
}
