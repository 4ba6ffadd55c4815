/**
 * The images of web prompts, kept in the store's SQLite file so the conversation can show them later: each
 * image once, by the sha256 of its bytes (`image_blobs`), and which sessions were sent it
 * (`session_images`). An image is served only for a session it was sent to; deleting a session (by request or
 * by retention) deletes its links and every image no other session still holds. Each change is one
 * transaction, so a SIGKILL leaves an image either fully stored or not at all.
 */
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { PromptImage } from "./protocol.ts";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS image_blobs(sha256 TEXT PRIMARY KEY, mimeType TEXT NOT NULL,
  bytes INTEGER NOT NULL, data BLOB NOT NULL, createdAt INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS session_images(sessionId TEXT NOT NULL, sha256 TEXT NOT NULL,
  createdAt INTEGER NOT NULL, PRIMARY KEY(sessionId, sha256));
CREATE INDEX IF NOT EXISTS session_images_by_sha ON session_images(sha256);
`;

/** A sha256 as this store names images: 64 lowercase hex digits. */
export const SHA256_RE = /^[0-9a-f]{64}$/;

/** What the store says about an image it took: how the plugin and the conversation refer to it. */
export interface StoredImageRef {
  sha256: string;
  mimeType: string;
  /** Decoded size. */
  bytes: number;
}

/** An image read back for serving. */
export interface StoredImage {
  mimeType: string;
  data: Uint8Array;
}

/** The sha256 (lowercase hex) of some bytes. */
export function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/**
 * The prompt images of one SQLite file: `Sessions.prompt` keeps them through it synchronously (no replicas),
 * and `app.images` reads them through lib/storage/sqlite_image_log.ts over the same tables.
 */
export class ImageStore {
  #db: DatabaseSync;
  #insertBlob: StatementSync;
  #insertLink: StatementSync;
  #get: StatementSync;
  #shasOf: StatementSync;
  #deleteLinks: StatementSync;
  #deleteOrphan: StatementSync;

  constructor(db: DatabaseSync) {
    this.#db = db;
    db.exec(SCHEMA);
    this.#insertBlob = db.prepare(
      "INSERT OR IGNORE INTO image_blobs(sha256, mimeType, bytes, data, createdAt) VALUES (?, ?, ?, ?, ?)",
    );
    this.#insertLink = db.prepare(
      "INSERT OR IGNORE INTO session_images(sessionId, sha256, createdAt) VALUES (?, ?, ?)",
    );
    this.#get = db.prepare(
      `SELECT b.mimeType AS mimeType, b.data AS data FROM session_images l
       JOIN image_blobs b ON b.sha256 = l.sha256 WHERE l.sessionId = ? AND l.sha256 = ?`,
    );
    this.#shasOf = db.prepare("SELECT sha256 FROM session_images WHERE sessionId = ?");
    this.#deleteLinks = db.prepare("DELETE FROM session_images WHERE sessionId = ?");
    this.#deleteOrphan = db.prepare(
      "DELETE FROM image_blobs WHERE sha256 = ? AND NOT EXISTS (SELECT 1 FROM session_images WHERE sha256 = ?)",
    );
  }

  /**
   * Keep a prompt's images for a session, already checked by `checkImages`; one transaction.
   * @returns each image's sha256, type and decoded size, in order.
   */
  put(sessionId: string, images: readonly PromptImage[], now = Date.now()): StoredImageRef[] {
    const decoded = images.map((i) => {
      const data = Buffer.from(i.data, "base64");
      return { data, mimeType: i.mimeType, sha256: sha256Hex(data) };
    });
    this.#transaction(() => {
      for (const d of decoded) {
        this.#insertBlob.run(d.sha256, d.mimeType, d.data.length, d.data, now);
        this.#insertLink.run(sessionId, d.sha256, now);
      }
    });
    return decoded.map((d) => ({ sha256: d.sha256, mimeType: d.mimeType, bytes: d.data.length }));
  }

  /** An image sent to `sessionId`, or null (unknown image, or one of another session only). */
  get(sessionId: string, sha256: string): StoredImage | null {
    const row = this.#get.get(sessionId, sha256) as { mimeType: string; data: Uint8Array } | undefined;
    return row ? { mimeType: row.mimeType, data: row.data } : null;
  }

  /** Forget a deleted session's images: its links, and each image no other session holds. */
  sessionDeleted(sessionId: string): void {
    this.#transaction(() => {
      const shas = (this.#shasOf.all(sessionId) as { sha256: string }[]).map((r) => r.sha256);
      this.#deleteLinks.run(sessionId);
      for (const sha of shas) this.#deleteOrphan.run(sha, sha);
    });
  }

  /** Run `fn` in a transaction of its own, or inside the caller's when one is open. */
  #transaction(fn: () => void): void {
    if (this.#db.isTransaction) return fn();
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      fn();
      this.#db.exec("COMMIT");
    } catch (err) {
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      throw err;
    }
  }
}
