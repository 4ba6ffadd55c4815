import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { ImageStore, sha256Hex } from "./image_store.ts";

/** A valid 1×1 PNG, and a JPEG start (the store trusts `checkImages`: only the bytes matter here). */
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const JPEG = btoa(String.fromCharCode(0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46, 0, 1));
const bytesOf = (b64: string) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));

async function withDb(fn: (db: DatabaseSync, path: string) => void | Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-images-" });
  const db = new DatabaseSync(`${dir}/lvmh.db`);
  try {
    await fn(db, `${dir}/lvmh.db`);
  } finally {
    db.close();
    await Deno.remove(dir, { recursive: true });
  }
}

const count = (db: DatabaseSync, table: string) =>
  (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;

Deno.test("image store: images by sha256, served only to the sessions they were sent to", () =>
  withDb((db) => {
    const store = new ImageStore(db);
    const refs = store.put("a", [{ mimeType: "image/png", data: PNG }, {
      mimeType: "image/jpeg",
      data: JPEG,
    }]);
    const png = sha256Hex(bytesOf(PNG)), jpeg = sha256Hex(bytesOf(JPEG));
    assert.deepEqual(refs, [
      { sha256: png, mimeType: "image/png", bytes: 70 },
      { sha256: jpeg, mimeType: "image/jpeg", bytes: 12 },
    ]);
    assert.equal(
      png,
      "497790947d4666760ce38f3c00e852c71fdb66cae849bae8e9ede352719e1581",
      "sha256sum of the PNG",
    );
    const got = store.get("a", png);
    assert.equal(got?.mimeType, "image/png");
    assert.deepEqual(got?.data, bytesOf(PNG));
    assert.equal(store.get("b", png), null, "not sent to b");
    assert.equal(store.get("a", "0".repeat(64)), null);

    // The same picture again, and to another session: its bytes are kept once.
    store.put("a", [{ mimeType: "image/png", data: PNG }]);
    store.put("b", [{ mimeType: "image/png", data: PNG }]);
    assert.equal(count(db, "image_blobs"), 2);
    assert.equal(count(db, "session_images"), 3);
    assert.ok(store.get("b", png));
  }));

Deno.test("image store: deleting a session drops its links and the images no other session holds", () =>
  withDb((db) => {
    const store = new ImageStore(db);
    store.put("a", [{ mimeType: "image/png", data: PNG }, { mimeType: "image/jpeg", data: JPEG }]);
    store.put("b", [{ mimeType: "image/png", data: PNG }]);
    const png = sha256Hex(bytesOf(PNG)), jpeg = sha256Hex(bytesOf(JPEG));
    store.sessionDeleted("a");
    assert.equal(store.get("a", png), null);
    assert.equal(store.get("a", jpeg), null);
    assert.ok(store.get("b", png), "b still has the PNG");
    assert.equal(count(db, "image_blobs"), 1, "the JPEG only a had is gone");
    store.sessionDeleted("b");
    assert.equal(count(db, "image_blobs"), 0);
    assert.equal(count(db, "session_images"), 0);
    store.sessionDeleted("never-had-any");
  }));

Deno.test("image store: what was put is there when the file is opened again", () =>
  withDb((db, path) => {
    new ImageStore(db).put("a", [{ mimeType: "image/png", data: PNG }]);
    const again = new DatabaseSync(path);
    try {
      assert.deepEqual(new ImageStore(again).get("a", sha256Hex(bytesOf(PNG)))?.data, bytesOf(PNG));
    } finally {
      again.close();
    }
  }));
