/**
 * One contract, two stores, for settings, prompt images and merge request records: every case runs against
 * SQLite (a real file under the daemon's Store) and PostgreSQL (a real server from testing/postgres.ts, a
 * fresh database per case). `a` and `b` are two replicas on one database (on SQLite, two parts of the one
 * daemon on its handle). Lost hints and killed listeners are in tests/process/settings_images_mr_pg_test.ts.
 */
import assert from "node:assert/strict";
import { contractTest, newDatabase, opening } from "../../testing/storage_replicas.ts";
import { hear, type Opened, openPg, openSqlite } from "../../testing/settings_images_mr.ts";
import {
  GITLAB_BASE_URL,
  GITLAB_TOKEN,
  GITLAB_USERNAME,
  HOOK_GITLAB_SECRET,
} from "../../lib/storage/settings_log.ts";
import { sha256Hex } from "../../lib/storage/image_log.ts";
import type { Row, Save } from "../../lib/storage/merge_request_log.ts";

/** A setting changed on one replica is heard on the other within this. */
const HEAR_MS = 1_000;
const TOKEN = "glpat-contract-0123456789abcdef";
const HOOK_SECRET = "hook-secret-0123456789abcdef";

function b64(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes));
}

/** Bytes that differ per seed, with every byte value in them (a text column would mangle some). */
function image(seed: number, size = 70_000): Uint8Array {
  return Uint8Array.from({ length: size }, (_, i) => (i * 31 + seed * 7 + (i >> 8)) & 0xff);
}

/** What a GitLab read writes over `seen`. */
function save(seen: Row, at: number, prompted: number | null): Save {
  return {
    fields: {
      iid: 7,
      webUrl: "https://gitlab.example/g/p/-/merge_requests/7",
      state: "opened",
      targetBranch: "main",
      title: "Add it",
      pipeline: prompted === null ? null : { id: prompted, status: "failed", webUrl: "" },
      mergeStatus: "can_be_merged",
      notes: 2,
    },
    updatedAt: at,
    refreshedAt: at,
    marks: {
      notified: prompted,
      prompted,
      prompts: seen.pipelinePrompts + (prompted === null ? 0 : 1),
    },
  };
}

function contract(name: string, open: () => Promise<Opened>) {
  const withStore = opening(open);
  contractTest(`settings, images and merge request records contract (${name})`, name, async (t) => {
    await t.step(
      "settings set on A are read on B and heard by B's subscription",
      () =>
        withStore(async ({ a, b }) => {
          const hearing = await hear(b.settings);
          const waits: number[] = [];
          let heard = hearing.next(GITLAB_TOKEN, HEAR_MS);
          await a.settings.put({
            [GITLAB_TOKEN]: TOKEN,
            [GITLAB_USERNAME]: "alice",
            [GITLAB_BASE_URL]: "https://gitlab.example",
          });
          waits.push(await heard);
          assert.deepEqual(await b.settings.getMany([GITLAB_TOKEN, GITLAB_BASE_URL, "unset"]), {
            [GITLAB_TOKEN]: TOKEN,
            [GITLAB_BASE_URL]: "https://gitlab.example",
            unset: null,
          });
          heard = hearing.next(HOOK_GITLAB_SECRET, HEAR_MS);
          await a.settings.put({ [HOOK_GITLAB_SECRET]: HOOK_SECRET });
          waits.push(await heard);
          assert.equal(await b.settings.get(HOOK_GITLAB_SECRET), HOOK_SECRET);
          for (let i = 0; i < 5; i++) {
            heard = hearing.next(GITLAB_USERNAME, HEAR_MS);
            await a.settings.put({ [GITLAB_USERNAME]: `user${i}` });
            waits.push(await heard);
            assert.equal(await b.settings.get(GITLAB_USERNAME), `user${i}`);
          }
          // A disconnect removes the three keys at once; the removal is heard too.
          heard = hearing.next(GITLAB_TOKEN, HEAR_MS);
          await b.settings.put({
            [GITLAB_TOKEN]: null,
            [GITLAB_USERNAME]: null,
            [GITLAB_BASE_URL]: null,
          });
          waits.push(await heard);
          assert.equal(await a.settings.get(GITLAB_TOKEN), null);
          hearing.stop();
          console.log(`  ${name}: heard on B after ${waits.map(Math.round).join(", ")} ms`);
          assert.ok(Math.max(...waits) < HEAR_MS);
          // Only keys are ever told, never values.
          assert.ok(!JSON.stringify(hearing.calls).includes(TOKEN));
        }),
    );

    await t.step("a listing never returns a secret", () =>
      withStore(async ({ a, b }) => {
        await a.settings.put({
          [GITLAB_TOKEN]: TOKEN,
          [GITLAB_USERNAME]: "alice",
          [GITLAB_BASE_URL]: "https://gitlab.example",
          [HOOK_GITLAB_SECRET]: HOOK_SECRET,
          "some.future.key": "unknown keys are secret",
        });
        const listed = await b.settings.list();
        assert.deepEqual(listed, [
          { key: GITLAB_BASE_URL, secret: false, value: "https://gitlab.example" },
          { key: GITLAB_TOKEN, secret: true, value: null },
          { key: GITLAB_USERNAME, secret: false, value: "alice" },
          { key: HOOK_GITLAB_SECRET, secret: true, value: null },
          { key: "some.future.key", secret: true, value: null },
        ]);
        const text = JSON.stringify(listed);
        for (const secret of [TOKEN, HOOK_SECRET, "unknown keys"]) assert.ok(!text.includes(secret));
      }));

    await t.step(
      "an image kept on A is read on B byte for byte, once per sha256, gone with its session",
      () =>
        withStore(async ({ a, b, blobs }) => {
          const one = image(1);
          const two = image(2, 300);
          const refs = await a.images.put("s1", [
            { mimeType: "image/png", data: b64(one) },
            { mimeType: "image/jpeg", data: b64(two) },
            { mimeType: "image/png", data: b64(one) },
          ]);
          assert.deepEqual(refs.map((r) => [r.sha256, r.bytes]), [
            [sha256Hex(one), one.length],
            [sha256Hex(two), two.length],
            [sha256Hex(one), one.length],
          ]);
          const read = await b.images.get("s1", sha256Hex(one));
          assert.equal(read?.mimeType, "image/png");
          assert.deepEqual(read?.data, one);
          assert.deepEqual((await b.images.get("s1", sha256Hex(two)))?.data, two);
          // Only for a session it was sent to.
          assert.equal(await b.images.get("s2", sha256Hex(one)), null);
          // The same image sent to another session, on the other replica, is stored once.
          await b.images.put("s2", [{ mimeType: "image/png", data: b64(one) }]);
          assert.equal(await blobs(), 2);
          assert.deepEqual((await a.images.get("s2", sha256Hex(one)))?.data, one);
          await b.images.sessionDeleted("s1");
          assert.equal(await a.images.get("s1", sha256Hex(one)), null);
          assert.equal(await blobs(), 1, "the image s2 still holds stays, the other goes");
          assert.deepEqual((await a.images.get("s2", sha256Hex(one)))?.data, one);
          await a.images.sessionDeleted("s2");
          assert.equal(await blobs(), 0);
        }),
    );

    await t.step(
      "an image kept while another replica deletes the last session holding it stays",
      () =>
        withStore(async ({ a, b, blobs }) => {
          for (let i = 0; i < 20; i++) {
            const bytes = image(100 + i, 2_000);
            await a.images.put(`old${i}`, [{ mimeType: "image/png", data: b64(bytes) }]);
            await Promise.all([
              b.images.sessionDeleted(`old${i}`),
              a.images.put(`new${i}`, [{ mimeType: "image/png", data: b64(bytes) }]),
            ]);
            assert.deepEqual(
              (await b.images.get(`new${i}`, sha256Hex(bytes)))?.data,
              bytes,
              `round ${i}`,
            );
          }
          assert.equal(await blobs(), 20);
        }),
    );

    await t.step(
      "20 rounds of two replicas moving the pushed sha from the same lease: one wins",
      () =>
        withStore(async ({ a, b }) => {
          const push = (sha: string) => ({ repo: "g/p", sourceBranch: "lvmh/s", sha });
          let lease = null as string | null;
          for (let i = 0; i < 20; i++) {
            // Alternate who goes first so neither is always the one whose statement leaves first.
            const [x, y] = i % 2 ? [a, b] : [b, a];
            const results: boolean[] = await Promise.all([
              x.mrs.updateIf("s", lease, push(`x${i}`), 1_000 + i),
              y.mrs.updateIf("s", lease, push(`y${i}`), 1_000 + i),
            ]);
            assert.equal(results.filter(Boolean).length, 1, `round ${i}: exactly one wins`);
            const won = results[0] ? `x${i}` : `y${i}`;
            assert.equal((await a.mrs.row("s"))?.pushedSha, won);
            assert.equal((await b.mrs.row("s"))?.pushedSha, won);
            lease = won;
          }
          assert.equal(await a.mrs.updateIf("s", "stale", push("z"), 2_000), false);
          assert.equal(await a.mrs.updateIf("s", null, push("z"), 2_000), false, "a record exists");
          const row = (await b.mrs.row("s"))!;
          assert.deepEqual([row.repo, row.sourceBranch, row.updatedAt, row.iid], [
            "g/p",
            "lvmh/s",
            1_019,
            null,
          ]);
        }),
    );

    await t.step(
      "a read is saved once over the row it was computed from",
      () =>
        withStore(async ({ a, b }) => {
          await a.mrs.updateIf("s", null, { repo: "g/p", sourceBranch: "lvmh/s", sha: "abc" }, 1_000);
          const seen = (await b.mrs.row("s"))!;
          // Both replicas read the same failed pipeline and would prompt for it: one saves.
          const saved = await Promise.all([
            a.mrs.saveIf("s", seen, save(seen, 2_000, 41)),
            b.mrs.saveIf("s", seen, save(seen, 2_001, 41)),
          ]);
          assert.equal(saved.filter(Boolean).length, 1);
          const row = (await a.mrs.row("s"))!;
          assert.deepEqual(
            [row.iid, row.state, row.pipelinePrompted, row.pipelinePrompts, row.pushedSha, row.notes],
            [7, "opened", 41, 1, "abc", 2],
          );
          assert.deepEqual(JSON.parse(row.pipeline!), { id: 41, status: "failed", webUrl: "" });
          assert.equal(await b.mrs.saveIf("s", seen, save(seen, 3_000, 42)), false, "over a stale read");
          assert.equal(await b.mrs.saveIf("gone", seen, save(seen, 3_000, 42)), false, "no record");
          assert.deepEqual(await b.mrs.byBranch("g/p", "lvmh/s"), ["s"]);
          assert.deepEqual(await b.mrs.due(2_001, 5), ["s"]);
          assert.deepEqual(await b.mrs.due(1_999, 5), []);
          await a.mrs.postpone("s", 5_000);
          assert.deepEqual(await b.mrs.due(4_999, 5), []);
          await b.mrs.delete("s");
          assert.equal(await a.mrs.row("s"), null);
          assert.deepEqual(await a.mrs.all(), []);
        }),
    );

    await t.step(
      "everything survives closing and opening again (a restart)",
      () =>
        withStore(async (o) => {
          const bytes = image(9);
          await o.a.settings.put({ [GITLAB_TOKEN]: TOKEN, [HOOK_GITLAB_SECRET]: HOOK_SECRET });
          await o.a.images.put("s", [{ mimeType: "image/webp", data: b64(bytes) }]);
          await o.a.mrs.updateIf("s", null, { repo: "g/p", sourceBranch: "lvmh/s", sha: "abc" }, 1_000);
          const seen = (await o.a.mrs.row("s"))!;
          await o.b.mrs.saveIf("s", seen, save(seen, 2_000, null));
          const before = await o.a.mrs.all();
          await o.reopen();
          assert.deepEqual(await o.b.settings.getMany([GITLAB_TOKEN, HOOK_GITLAB_SECRET]), {
            [GITLAB_TOKEN]: TOKEN,
            [HOOK_GITLAB_SECRET]: HOOK_SECRET,
          });
          assert.deepEqual(await o.b.images.get("s", sha256Hex(bytes)), {
            mimeType: "image/webp",
            data: bytes,
          });
          assert.deepEqual(await o.b.mrs.all(), before);
          assert.equal(
            await o.b.mrs.updateIf("s", "abc", { repo: "g/p", sourceBranch: "lvmh/s", sha: "d" }, 3),
            true,
          );
        }),
    );
  });
}

contract("sqlite", openSqlite);
contract("postgres", async () => openPg(await newDatabase()));
