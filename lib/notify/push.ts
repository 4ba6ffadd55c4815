/**
 * Web push, the one owner of the VAPID keys and push subscriptions: browsers subscribe with the kinds they
 * want; an event goes to each subscription that asked for it, unless that browser shows the page right now
 * (it saw it there) or the same session and kind went out in the last 30 s. The push service's 404/410 deletes
 * a subscription; 429 and 5xx are retried with backoff (honouring `Retry-After`).
 */
import type { DatabaseSync } from "node:sqlite";
import { describe, type NotifyEvent, type NotifyKind } from "./kinds.ts";
import type { PushSubscribeBody } from "../protocol.ts";
import { PushStore, type PushSubscriptionRecord } from "./push_store.ts";
import { Coalescer } from "./coalesce.ts";
import { generateVapidKeys, sendPush } from "./web_push.ts";
import { NotFoundError } from "../errors.ts";

/** A visibility report counts for this long; pages renew it while shown. */
export const VISIBLE_TTL_MS = 60_000;

/** Timing and identity of the sender; tests shorten the retry delays. */
export interface PushOptions {
  /** The VAPID `sub` claim: a mailto: or https: contact for push services. */
  subject?: string;
  retryDelaysMs?: number[];
  coalesceMs?: number;
}

/** What a push attempt came to, for tests and logs. */
export interface PushOutcome {
  endpoint: string;
  status: number | null;
  action: "sent" | "deleted" | "gave-up";
}

/** VAPID keys, subscriptions and sending. */
export class Push {
  #store: PushStore;
  #keys: { publicKey: string; privateKey: string };
  #visible = new Map<string, number>();
  #coalescer: Coalescer;
  #subject: string;
  #retry: number[];
  #pending = new Set<Promise<unknown>>();
  #closed = false;
  /** Every outcome, newest last (bounded); tests read it. */
  readonly outcomes: PushOutcome[] = [];

  constructor(db: DatabaseSync, options: PushOptions = {}) {
    this.#store = new PushStore(db);
    this.#keys = this.#store.keys(generateVapidKeys);
    this.#coalescer = new Coalescer(options.coalesceMs);
    this.#subject = options.subject ?? "mailto:lvmh@localhost";
    this.#retry = options.retryDelaysMs ?? [1000, 4000, 16_000];
  }

  /** The VAPID public key browsers pass to `pushManager.subscribe()` as `applicationServerKey`. */
  get publicKey(): string {
    return this.#keys.publicKey;
  }

  /** Add or replace this browser's subscription. */
  subscribe(body: PushSubscribeBody, owner: string): Omit<PushSubscriptionRecord, "p256dh" | "auth"> {
    const record: PushSubscriptionRecord = {
      endpoint: body.subscription.endpoint,
      p256dh: body.subscription.keys.p256dh,
      auth: body.subscription.keys.auth,
      kinds: [...new Set(body.kinds)],
      owner,
      createdAt: Date.now(),
    };
    this.#store.upsert(record);
    return { endpoint: record.endpoint, kinds: record.kinds, owner, createdAt: record.createdAt };
  }

  /**
   * Forget a browser's subscription.
   * @throws {NotFoundError} when there is none for `endpoint`.
   */
  unsubscribe(endpoint: string): void {
    if (!this.#store.remove(endpoint)) throw new NotFoundError("no push subscription for that endpoint");
    this.#visible.delete(endpoint);
  }

  /** The kinds one browser asked for, or null when it has no subscription. */
  kindsOf(endpoint: string): NotifyKind[] | null {
    return this.#store.all().find((s) => s.endpoint === endpoint)?.kinds ?? null;
  }

  /** Note that the page of the browser behind `endpoint` is shown (it sees events there) or hidden. */
  setVisible(endpoint: string, visible: boolean, now = Date.now()): void {
    if (visible) this.#visible.set(endpoint, now);
    else this.#visible.delete(endpoint);
  }

  /** Push `event` to every subscription that wants it; returns once each attempt is started. */
  notify(event: NotifyEvent): void {
    if (this.#closed) return;
    const now = Date.now();
    const targets = this.#store.all().filter((s) => {
      if (!s.kinds.includes(event.type)) return false;
      const seen = this.#visible.get(s.endpoint);
      return seen === undefined || now - seen > VISIBLE_TTL_MS;
    });
    if (!targets.length || !this.#coalescer.admit(event.sessionId, event.type, now)) return;
    const payload = JSON.stringify(payloadOf(event));
    for (const target of targets) {
      const p = this.#deliver(target, payload, event).finally(() => this.#pending.delete(p));
      this.#pending.add(p);
    }
  }

  /** Wait for the attempts in flight (tests). */
  async idle(): Promise<void> {
    while (this.#pending.size) await Promise.allSettled([...this.#pending]);
  }

  /** Stop sending: retries still waiting are dropped. */
  close(): void {
    this.#closed = true;
  }

  async #deliver(target: PushSubscriptionRecord, payload: string, event: NotifyEvent): Promise<void> {
    const topic = await topicOf(`${event.type}:${event.sessionId ?? ""}`);
    for (let attempt = 0;; attempt++) {
      let status: number | null = null;
      let retryAfterMs: number | null = null;
      try {
        const res = await sendPush(target, payload, {
          vapid: { subject: this.#subject, ...this.#keys },
          ttlSec: event.type === "approval.requested" ? 24 * 3600 : 3600,
          urgency: event.type === "approval.requested" ? "high" : "normal",
          topic,
        });
        await res.body?.cancel();
        status = res.status;
        const ra = Number(res.headers.get("retry-after"));
        if (Number.isFinite(ra) && ra > 0) retryAfterMs = Math.min(ra * 1000, 10 * 60_000);
      } catch (error) {
        console.warn(`lvmh: push to ${new URL(target.endpoint).origin} failed: ${(error as Error).message}`);
      }
      if (status !== null && status >= 200 && status < 300) return this.#outcome(target, status, "sent");
      if (status === 404 || status === 410) {
        this.#store.remove(target.endpoint);
        return this.#outcome(target, status, "deleted");
      }
      const retriable = status === null || status === 429 || status >= 500;
      if (!retriable || attempt >= this.#retry.length || this.#closed) {
        return this.#outcome(target, status, "gave-up");
      }
      await new Promise((r) => setTimeout(r, retryAfterMs ?? this.#retry[attempt]));
    }
  }

  #outcome(target: PushSubscriptionRecord, status: number | null, action: PushOutcome["action"]): void {
    this.outcomes.push({ endpoint: target.endpoint, status, action });
    if (this.outcomes.length > 1000) this.outcomes.shift();
  }
}

/** What the service worker gets: title and body to show, and where a click goes. */
export function payloadOf(event: NotifyEvent) {
  const { title, body } = describe(event);
  const path = typeof event.data.path === "string"
    ? event.data.path
    : event.sessionId
    ? `/sessions/${encodeURIComponent(event.sessionId)}`
    : "/";
  return {
    title,
    body,
    tag: `${event.type}:${event.sessionId ?? ""}`,
    data: { type: event.type, sessionId: event.sessionId, url: path, at: event.at },
  };
}

/** A push `Topic` (at most 32 base64url characters) from a tag, so a newer push replaces an undelivered one. */
async function topicOf(tag: string): Promise<string> {
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(tag)));
  return btoa(String.fromCharCode(...hash)).replace(/\+/g, "-").replace(/\//g, "_").slice(0, 32);
}
