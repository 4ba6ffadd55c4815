/**
 * Prompt images in the daemon's SQLite file, over lib/image_store.ts (its tables and transactions: the one
 * schema). node:sqlite is synchronous, so each call is the image store's, settled as a promise.
 */
import type { DatabaseSync } from "node:sqlite";
import { ImageStore } from "../image_store.ts";
import type { ImageLog, PromptImage, StoredImage, StoredImageRef } from "./image_log.ts";
import { settle } from "./sqlite_sync.ts";

/** The image log on a SQLite handle shared with the daemon's `Store` (which stays its owner). */
export class SqliteImageLog implements ImageLog {
  readonly kind = "sqlite";
  #store: ImageStore;

  constructor(db: DatabaseSync) {
    this.#store = new ImageStore(db);
  }

  put(sessionId: string, images: readonly PromptImage[], now?: number): Promise<StoredImageRef[]> {
    return settle(() => this.#store.put(sessionId, images, now));
  }

  get(sessionId: string, sha256: string): Promise<StoredImage | null> {
    return settle(() => {
      const image = this.#store.get(sessionId, sha256);
      // node:sqlite may hand a view into a larger buffer: a copy of exactly the image's bytes.
      return image && { mimeType: image.mimeType, data: new Uint8Array(image.data) };
    });
  }

  sessionDeleted(sessionId: string): Promise<void> {
    return settle(() => this.#store.sessionDeleted(sessionId));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
