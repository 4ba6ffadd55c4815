/**
 * REST shapes of notifications (Transport 2): outbound webhook endpoints and their delivery attempts, and the
 * browsers' push subscriptions.
 */
import { z } from "zod";
import { NotifyKind } from "../notify/kinds.ts";
import { isSecret } from "../webhooks/secret_format.ts";

/** A registered webhook endpoint; its `secret` is returned once, by `POST /api/webhooks`. */
export interface EndpointRecord {
  id: string;
  url: string;
  events: NotifyKind[];
  secret: string;
  createdAt: number;
}

/** One delivery attempt, as `GET /api/webhooks/:id/deliveries` reports it. */
export interface AttemptRow {
  deliveryId: string;
  type: string;
  at: number;
  /** HTTP status, or null when no response came (timeout, refused). */
  status: number | null;
  latencyMs: number;
  error: string | null;
  /** The delivery's state now: pending (will retry), delivered or failed. */
  state: string;
}

/** An endpoint as `GET /api/webhooks` lists it: no secret, and its latest attempt (null before any). */
export type Endpoint = Omit<EndpointRecord, "secret"> & { last: AttemptRow | null };

const b64url = z.string().regex(/^[A-Za-z0-9_-]+={0,2}$/, "must be base64url").max(200);
/** `POST /api/push/subscriptions`: what `PushSubscription.toJSON()` gives, and the kinds wanted. */
export const PushSubscribeBody = z.object({
  subscription: z.object({
    endpoint: z.url({ protocol: /^https?$/ }).max(2000),
    keys: z.object({ p256dh: b64url, auth: b64url }),
  }),
  kinds: z.array(NotifyKind).max(20),
});
export type PushSubscribeBody = z.infer<typeof PushSubscribeBody>;
/** `GET` and `DELETE /api/push/subscriptions?endpoint=`: which browser's subscription. */
export const PushEndpointQuery = z.object({ endpoint: z.string().min(1).max(2000) });
/** `POST /api/push/visible`: the page of this browser is shown (or hidden). */
export const PushVisibleBody = z.object({ endpoint: z.string().max(2000), visible: z.boolean() });

/** `POST /api/webhooks`: an outbound endpoint, the kinds it gets, and optionally its own secret. */
export const EndpointBody = z.object({
  url: z.url({ protocol: /^https?$/ }).max(2000),
  events: z.array(NotifyKind).min(1).max(20),
  secret: z.string().refine(isSecret, "secret must be whsec_ and 24 to 64 base64 bytes").optional(),
});
export type EndpointBody = z.infer<typeof EndpointBody>;
