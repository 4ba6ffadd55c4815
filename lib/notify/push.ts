/**
 * Web push, the one owner of the VAPID keys and push subscriptions: browsers subscribe with the kinds they
 * want; an event goes to each subscription that asked for it, unless that browser shows the page right now
 * (it saw it there) or the same session and kind went out in the last 30 s. The push service's 404/410 deletes
 * a subscription; 429 and 5xx are retried with backoff (honouring `Retry-After`).
 *
 * The keys and subscriptions are a `PushLog` (lib/storage/push_log.ts): the daemon's SQLite file, or PostgreSQL
 * shared by several replicas, which then sign with one key pair and push to the same subscriptions (which
 * replica sends an event is lib/notify/start.ts's rule). Visibility reports are kept in memory.
 */
import { describe, type NotifyEvent, type NotifyKind } from "./kinds.ts";
import type { PushSubscribeBody } from "../protocol.ts";
import type { PushSubscriptionRecord } from "./push_store.ts";
import type { PushLog, VapidKeys } from "../storage/push_log.ts";
import type { VisibilityShare } from "./visibility.ts";
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
  /** With replicas: visibility reports made on one are heard by all (lib/notify/visibility.ts). */
  visibility?: VisibilityShare;
}

/** What a push attempt came to, for tests and logs. */
export interface PushOutcome {
  endpoint: string;
  status: number | null;
  action: "sent" | "deleted" | "gave-up";
}

/** VAPID keys, subscriptions and sending. */
export class Push {
  #log: PushLog;
  #keys: Promise<VapidKeys> | null = null;
  #visible = new Map<string, number>();
  #coalescer: Coalescer;
  #subject: string;
  #retry: number[];
  #pending = new Set<Promise<unknown>>();
  #closed = false;
  #share: VisibilityShare | null;
  /** Every outcome, newest last (bounded); tests read it. */
  readonly outcomes: PushOutcome[] = [];

  constructor(log: PushLog, options: PushOptions = {}) {
    this.#log = log;
    this.#coalescer = new Coalescer(options.coalesceMs);
    this.#subject = options.subject ?? "mailto:lvmh@localhost";
    this.#retry = options.retryDelaysMs ?? [1000, 4000, 16_000];
    this.#share = options.visibility ?? null;
  }

  /** Read (or make, the first time in the deployment) the VAPID key pair. */
  async start(): Promise<void> {
    await this.#share?.start(({ endpoint, visible }) => this.#setVisible(endpoint, visible, Date.now()));
    await this.#vapid();
  }

  /** The VAPID public key browsers pass to `pushManager.subscribe()` as `applicationServerKey`. */
  async publicKey(): Promise<string> {
    return (await this.#vapid()).publicKey;
  }

  /** The stored pair, read once (again after a failed read: the database was away). */
  #vapid(): Promise<VapidKeys> {
    this.#keys ??= this.#log.vapidKeys(generateVapidKeys).catch((error) => {
      this.#keys = null;
      throw error;
    });
    return this.#keys;
  }

  /** Add or replace this browser's subscription. */
  async subscribe(
    body: PushSubscribeBody,
    owner: string,
  ): Promise<Omit<PushSubscriptionRecord, "p256dh" | "auth">> {
    const record: PushSubscriptionRecord = {
      endpoint: body.subscription.endpoint,
      p256dh: body.subscription.keys.p256dh,
      auth: body.subscription.keys.auth,
      kinds: [...new Set(body.kinds)],
      owner,
      createdAt: Date.now(),
    };
    await this.#log.upsert(record);
    return { endpoint: record.endpoint, kinds: record.kinds, owner, createdAt: record.createdAt };
  }

  /**
   * Forget a browser's subscription.
   * @throws {NotFoundError} when there is none for `endpoint`.
   */
  async unsubscribe(endpoint: string): Promise<void> {
    if (!await this.#log.remove(endpoint)) throw new NotFoundError("no push subscription for that endpoint");
    this.#visible.delete(endpoint);
  }

  /** The kinds one browser asked for, or null when it has no subscription. */
  kindsOf(endpoint: string): Promise<NotifyKind[] | null> {
    return this.#log.kindsOf(endpoint);
  }

  /** Note that the page of the browser behind `endpoint` is shown (it sees events there) or hidden. */
  async setVisible(endpoint: string, visible: boolean, now = Date.now()): Promise<void> {
    this.#setVisible(endpoint, visible, now);
    await this.#share?.publish({ endpoint, visible });
  }

  #setVisible(endpoint: string, visible: boolean, now: number): void {
    if (visible) this.#visible.set(endpoint, now);
    else this.#visible.delete(endpoint);
  }

  /** Push `event` to every subscription that wants it; resolves once each attempt is started. */
  notify(event: NotifyEvent): Promise<void> {
    if (this.#closed) return Promise.resolve();
    // Counted from the call, so `idle()` waits for the read of the targets too.
    const started = this.#notify(event);
    const p = started.catch(() => {}).finally(() => this.#pending.delete(p));
    this.#pending.add(p);
    return started;
  }

  async #notify(event: NotifyEvent): Promise<void> {
    const now = Date.now();
    const wanted = await this.#log.targets(event.type);
    if (this.#closed) return;
    const targets = wanted.filter((s) => {
      const seen = this.#visible.get(s.endpoint);
      return seen === undefined || now - seen > VISIBLE_TTL_MS;
    });
    if (!targets.length || !this.#coalescer.admit(event.sessionId, event.type, now)) return;
    const payload = JSON.stringify(payloadOf(event));
    for (const target of targets) {
      const p = this.#deliver(target, payload, event).catch((error) => {
        console.warn(
          `lvmh: push to ${new URL(target.endpoint).origin} not sent: ${(error as Error).message}`,
        );
      }).finally(() => this.#pending.delete(p));
      this.#pending.add(p);
    }
  }

  /** Wait for the attempts in flight (tests). */
  async idle(): Promise<void> {
    while (this.#pending.size) await Promise.allSettled([...this.#pending]);
  }

  /** Stop sending: retries still waiting are dropped. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#share?.close();
  }

  async #deliver(target: PushSubscriptionRecord, payload: string, event: NotifyEvent): Promise<void> {
    const topic = await topicOf(`${event.type}:${event.sessionId ?? ""}`);
    const keys = await this.#vapid();
    for (let attempt = 0;; attempt++) {
      let status: number | null = null;
      let retryAfterMs: number | null = null;
      try {
        const res = await sendPush(target, payload, {
          vapid: { subject: this.#subject, ...keys },
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
        await this.#log.remove(target.endpoint).catch(() => false);
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
