/**
 * Prompt images in PostgreSQL, for several replicas on one database: lib/image_store.ts's two tables, bytes
 * as `bytea`. What SQLite's single writer gives for free has to be arranged here, where a prompt's image can
 * be kept on one replica while another deletes the last other session holding that very image:
 * - `put` upserts each blob with a no-op `DO UPDATE`, which locks an existing row until the commit, then links
 *   it to the session;
 * - `sessionDeleted` removes the session's links, locks the blobs they named (`FOR UPDATE`), and only then
 *   deletes those no link names, in a statement of its own: under READ COMMITTED that statement sees every
 *   link committed by a `put` it waited for, so a blob is never deleted under a fresh link; a `put` that waited
 *   for the delete instead finds no row and inserts the blob again.
 * Both take blob locks in sha256 order, so two of them wait for each other rather than deadlock; the one case
 * left (a prompt kept for the very session being deleted) is retried when PostgreSQL breaks the deadlock.
 */
import { Buffer } from "node:buffer";
import { type ConnectOptions, PgStore } from "./pg_client.ts";
import { openMigrated } from "./pg_migrate.ts";
import {
  decodeImages,
  type ImageLog,
  type PromptImage,
  refsOf,
  type StoredImage,
  type StoredImageRef,
} from "./image_log.ts";

/** Tries of a transaction PostgreSQL aborted to break a deadlock. */
const DEADLOCK_TRIES = 3;

/** The image log over a PostgreSQL pool whose database is migrated. */
export class PgImageLog extends PgStore implements ImageLog {
  /**
   * Connect to `url` and migrate its schema (lib/storage/pg_migrate.ts).
   * @throws {Error} when the database cannot be reached or migrated; the pool is then closed.
   */
  static async open(url: string, options: ConnectOptions = {}): Promise<PgImageLog> {
    const sql = await openMigrated(url, options);
    return new PgImageLog(sql, { ownsPool: true });
  }

  async put(sessionId: string, images: readonly PromptImage[], now = Date.now()): Promise<StoredImageRef[]> {
    const decoded = decodeImages(images);
    const once = [...new Map(decoded.map((d) => [d.sha256, d])).values()]
      .sort((a, b) => a.sha256 < b.sha256 ? -1 : a.sha256 > b.sha256 ? 1 : 0);
    await this.#retrying(() =>
      this.sql.begin(async (tx) => {
        for (const d of once) {
          // The first kept type stays, as SQLite's INSERT OR IGNORE keeps it; the no-op update locks the row.
          await tx`INSERT INTO image_blobs(sha256, mime_type, bytes, data, created_at)
            VALUES (${d.sha256}, ${d.mimeType}, ${d.data.length}, ${Buffer.from(d.data)}, ${now})
            ON CONFLICT(sha256) DO UPDATE SET created_at = image_blobs.created_at`;
          await tx`INSERT INTO session_images(session_id, sha256, created_at)
            VALUES (${sessionId}, ${d.sha256}, ${now}) ON CONFLICT DO NOTHING`;
        }
      })
    );
    return refsOf(decoded);
  }

  async get(sessionId: string, sha256: string): Promise<StoredImage | null> {
    const [row] = await this.sql`SELECT b.mime_type, b.data FROM session_images l
      JOIN image_blobs b ON b.sha256 = l.sha256 WHERE l.session_id = ${sessionId} AND l.sha256 = ${sha256}`;
    // The driver hands a Buffer: a plain copy of its bytes, as the SQLite log returns.
    return row ? { mimeType: row.mime_type as string, data: new Uint8Array(row.data as Uint8Array) } : null;
  }

  async sessionDeleted(sessionId: string): Promise<void> {
    await this.#retrying(() =>
      this.sql.begin(async (tx) => {
        const links = await tx`DELETE FROM session_images WHERE session_id = ${sessionId} RETURNING sha256`;
        const shas = links.map((r) => r.sha256 as string);
        if (!shas.length) return;
        await tx`SELECT sha256 FROM image_blobs WHERE sha256 = ANY(${shas}::text[])
          ORDER BY sha256 COLLATE "C" FOR UPDATE`;
        await tx`DELETE FROM image_blobs b WHERE b.sha256 = ANY(${shas}::text[])
          AND NOT EXISTS (SELECT 1 FROM session_images l WHERE l.sha256 = b.sha256)`;
      })
    );
  }

  async #retrying<T>(work: () => Promise<T>): Promise<T> {
    for (let attempt = 1;; attempt++) {
      try {
        return await work();
      } catch (error) {
        // 40P01: PostgreSQL rolled this transaction back to break a deadlock; nothing of it was kept.
        if ((error as { code?: string }).code !== "40P01" || attempt >= DEADLOCK_TRIES) throw error;
      }
    }
  }
}
