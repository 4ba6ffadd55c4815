/**
 * The live channel (lib/storage/live_channel.ts) on PostgreSQL: deltas go out as NOTIFY on `LIVE_CHANNEL`, each
 * payload carrying its publisher's id (so a replica skips its own deltas) and, packed, as many deltas as fit
 * under NOTIFY's 8000-byte limit. While one NOTIFY statement is out, further deltas queue and leave together
 * in the next one, in publish order: under a stream, one statement per round trip carries everything
 * published meanwhile, and a lone delta goes at once. Each statement is its own transaction, never an
 * append's: a NOTIFY-ing transaction takes a global lock at commit. PostgreSQL delivers one transaction's
 * notifications in the order they were sent, and transactions in commit order, so one publisher's deltas
 * arrive in publish order.
 *
 * Lossy (see LiveChannel): a delta too large for one payload, one queued behind more than `MAX_QUEUED`
 * others, or one whose statement failed is dropped and counted in `dropped`; one sent while a subscriber's
 * LISTEN connection was down is never heard. Subscribers LISTEN through lib/storage/pg_listener.ts, which
 * re-LISTENs after the connection closes and rebuilds a listener gone silent; there is nothing to sweep.
 *
 * Payload (text): `L1 <publisherId>\n`, then per delta `<after> <sessionId length> <json length>\n<sessionId><json>`,
 * lengths in UTF-16 code units, so neither a session id nor the JSON needs escaping.
 */
import { type ConnectOptions, connectPostgres, PgStore, type Sql } from "./pg_client.ts";
import { LISTENER_PING_MS, listenerClient, PgListener } from "./pg_listener.ts";
import { type LiveChannel, type LiveDelta, LiveSubscribers } from "./live_channel.ts";

/** The NOTIFY channel (empty payload: a listener's liveness ping). */
export const LIVE_CHANNEL = "lvmh_live";
/** NOTIFY refuses a payload of 8000 bytes or more. */
export const MAX_PAYLOAD_BYTES = 7_999;
/** Deltas waiting for a statement past this many (the database slow or away): the oldest are dropped. */
export const MAX_QUEUED = 10_000;
const HEADER = "L1 ";

export interface PgLiveChannelOptions {
  /**
   * true (default): as many deltas per payload as fit; false: one payload per delta. Both send every waiting
   * payload in one statement. bench/live_channel.ts measures the two.
   */
  pack?: boolean;
  /** Ping period of the listener's watchdog (default 5 s). */
  pingMs?: number;
  /** true: `close()` ends the pool. */
  ownsPool?: boolean;
}

/** A queued delta, encoded. */
interface Queued {
  text: string;
  bytes: number;
}

/** The UTF-8 length of `s` (what NOTIFY's limit counts), without encoding it. */
export function utf8Length(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else {
      // 3 bytes for one code unit (a lone surrogate too: it becomes U+FFFD); a pair is 2 code units, 4 bytes.
      n += 2;
      const next = s.charCodeAt(i + 1);
      if (c >= 0xd800 && c < 0xdc00 && next >= 0xdc00 && next < 0xe000) i++;
    }
  }
  return n;
}

/** One delta as it sits in a payload. */
export function deltaRecord(delta: LiveDelta): string {
  return `${delta.after} ${delta.sessionId.length} ${delta.json.length}\n${delta.sessionId}${delta.json}`;
}

/** A payload's text read back: its publisher and deltas, or null for one this build does not understand. */
export function parsePayload(text: string): { publisher: string; deltas: LiveDelta[] } | null {
  if (!text.startsWith(HEADER)) return null;
  let at = text.indexOf("\n");
  if (at < 0) return null;
  const publisher = text.slice(HEADER.length, at);
  const deltas: LiveDelta[] = [];
  at++;
  while (at < text.length) {
    const eol = text.indexOf("\n", at);
    if (eol < 0) return null;
    const [after, idLength, jsonLength] = text.slice(at, eol).split(" ").map(Number);
    if (![after, idLength, jsonLength].every(Number.isSafeInteger) || idLength < 0 || jsonLength < 0) {
      return null;
    }
    const start = eol + 1;
    const end = start + idLength + jsonLength;
    if (end > text.length) return null;
    deltas.push({
      sessionId: text.slice(start, start + idLength),
      after,
      json: text.slice(start + idLength, end),
    });
    at = end;
  }
  return { publisher, deltas };
}

/** The live channel over a PostgreSQL pool (no schema needed: NOTIFY only). */
export class PgLiveChannel extends PgStore implements LiveChannel {
  /** This object's id, in each payload it sends: its own deltas come back to its listener and are skipped. */
  readonly id = crypto.randomUUID().replaceAll("-", "").slice(0, 16);
  #header: string;
  #headerBytes: number;
  #pack: boolean;
  #subscribers = new LiveSubscribers();
  #listener: PgListener;
  #outbox: Queued[] = [];
  #sending: Promise<void> | null = null;
  #dropped = 0;
  #closed = false;

  /**
   * @param connectListener opens the client whose one connection LISTENs (again after the watchdog dropped
   *   the previous one); never the pool itself.
   */
  constructor(sql: Sql, connectListener: () => Sql, options: PgLiveChannelOptions = {}) {
    super(sql, options);
    this.#header = `${HEADER}${this.id}\n`;
    this.#headerBytes = utf8Length(this.#header);
    this.#pack = options.pack ?? true;
    this.#listener = new PgListener({
      channel: LIVE_CHANNEL,
      connect: connectListener,
      pool: sql,
      onHint: (text) => this.#heard(text),
      // Lossy: what was sent while the connection was down is gone, and the stored events make it good.
      onListen: () => {},
      active: () => this.#subscribers.size > 0,
      pingMs: options.pingMs ?? LISTENER_PING_MS,
    });
  }

  /** A channel on `url` with a pool of its own (two connections: NOTIFY statements go one at a time). */
  static open(
    url: string,
    options: ConnectOptions & Omit<PgLiveChannelOptions, "ownsPool"> = {},
  ): PgLiveChannel {
    const sql = connectPostgres(url, { max: options.max ?? 2, connectTimeout: options.connectTimeout });
    return new PgLiveChannel(sql, listenerClient(url, options), { ...options, ownsPool: true });
  }

  /** Deltas dropped so far: too large, queued past `MAX_QUEUED`, or their statement failed. */
  get dropped(): number {
    return this.#dropped;
  }

  publish(delta: LiveDelta): void {
    if (this.#closed) return;
    const text = deltaRecord(delta);
    const bytes = utf8Length(text);
    if (this.#headerBytes + bytes > MAX_PAYLOAD_BYTES) {
      this.#dropped++;
      return;
    }
    if (this.#outbox.length >= MAX_QUEUED) {
      this.#outbox.shift();
      this.#dropped++;
    }
    this.#outbox.push({ text, bytes });
    this.#sending ??= this.#send();
  }

  /** Resolves once every delta published so far went out (or was dropped); null when none waits. */
  sending(): Promise<void> | null {
    return this.#sending;
  }

  subscribe(fn: (delta: LiveDelta) => void): () => void {
    if (this.#closed) return () => {};
    const stop = this.#subscribers.add(fn);
    void this.#listener.start();
    return stop;
  }

  /**
   * Resolves once the LISTEN is in place: deltas published after that reach this channel's subscribers (a
   * no-op wait before the first `subscribe`, which starts it).
   */
  listening(): Promise<void> {
    return this.#closed ? Promise.resolve() : this.#listener.start();
  }

  override async close(): Promise<void> {
    this.#closed = true;
    this.#subscribers.clear();
    await this.#listener.close();
    await this.#sending;
    await super.close();
  }

  #heard(text: string): void {
    const payload = parsePayload(text);
    if (!payload || payload.publisher === this.id) return;
    for (const delta of payload.deltas) this.#subscribers.deliver(delta);
  }

  /** Send what waits, in one statement, until nothing waits. */
  async #send(): Promise<void> {
    try {
      // Let the deltas published in this tick join (and keep `#sending` set until after its assignment).
      await Promise.resolve();
      while (this.#outbox.length && !this.#closed) {
        const records = this.#outbox;
        this.#outbox = [];
        const payloads = this.#payloads(records);
        // A transaction that only NOTIFYs does not wait for a WAL flush (pg_stat_wal's wal_sync stayed put over
        // 200 of them), so asynchronous commit would gain nothing here.
        await this.sql`SELECT pg_notify(${LIVE_CHANNEL}, p) FROM unnest(${payloads}::text[]) AS p`
          .catch(() => {
            this.#dropped += records.length;
          });
      }
    } finally {
      this.#sending = null;
    }
  }

  /** The payloads carrying `records`, in order. */
  #payloads(records: Queued[]): string[] {
    if (!this.#pack) return records.map((r) => this.#header + r.text);
    const headerBytes = this.#headerBytes;
    const payloads: string[] = [];
    let parts: string[] = [];
    let bytes = headerBytes;
    for (const r of records) {
      if (parts.length && bytes + r.bytes > MAX_PAYLOAD_BYTES) {
        payloads.push(this.#header + parts.join(""));
        parts = [];
        bytes = headerBytes;
      }
      parts.push(r.text);
      bytes += r.bytes;
    }
    if (parts.length) payloads.push(this.#header + parts.join(""));
    return payloads;
  }
}
