/**
 * Prompt images shared by replicas (issue 23): two daemon processes on one real PostgreSQL database, a plugin
 * on replica A, a prompt with an image POSTed on A. Replica B serves the image byte for byte from its image
 * route, refuses it for another session, and once B deletes the session the image is gone from the shared
 * database (no other session holds it) and A answers 404 too.
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { startPostgres } from "../../testing/postgres.ts";
import { startReplicas } from "../../testing/replicas.ts";
import { connectAgent } from "../../testing/agent.ts";
import { waitFor } from "../../testing/daemon.ts";

/** A valid 1×1 PNG. */
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const PNG_BYTES = Uint8Array.from(atob(PNG), (c) => c.charCodeAt(0));

async function sha256Hex(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
}

Deno.test("replicas: a prompt image sent through A is served by B, and deleted with its session", async (t) => {
  await using pg = await startPostgres();
  const url = await pg.newDatabase();
  await using set = await startReplicas(2, { databaseUrl: url });
  const a = set.replicas[0].daemon();
  const b = set.replicas[1].daemon();
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  const sha = await sha256Hex(PNG_BYTES);
  const agent = await connectAgent(a, { sessionId: "img-1" });
  const other = await connectAgent(a, { sessionId: "img-2" });
  const known = async (d: typeof a, id: string) => (await d.api(`/api/sessions/${id}`)).ok;
  try {
    await t.step("the prompt with an image reaches A's plugin with its image", async () => {
      const res = await a.api("/api/sessions/img-1/prompt", {
        method: "POST",
        body: JSON.stringify({ message: "what is this?", images: [{ mimeType: "image/png", data: PNG }] }),
      });
      assert.equal(res.status, 200, await res.clone().text());
      const { promptId } = await res.json();
      const frame = await agent.waitFrame(
        (f) => f.type === "prompt" && f.promptId === promptId,
        "the prompt",
      );
      assert.deepEqual(frame.images, [{ mimeType: "image/png", data: PNG }]);
      // Kept on the shared database before the frame left.
      const rows = await sql`SELECT session_id FROM session_images WHERE sha256 = ${sha}`;
      assert.deepEqual(rows.map((r) => r.session_id), ["img-1"]);
    });

    await t.step("B serves it byte for byte", async () => {
      await waitFor(() => known(b, "img-1"), "img-1 known on B", 10_000);
      const res = await b.api(`/api/sessions/img-1/images/${sha}`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "image/png");
      assert.deepEqual(new Uint8Array(await res.arrayBuffer()), PNG_BYTES);
    });

    await t.step("B refuses it for another session, and an unknown image", async () => {
      await waitFor(() => known(b, "img-2"), "img-2 known on B", 10_000);
      const res = await b.api(`/api/sessions/img-2/images/${sha}`);
      assert.equal(res.status, 404, await res.text());
      const unknown = await b.api(`/api/sessions/img-1/images/${"0".repeat(64)}`);
      assert.equal(unknown.status, 404, await unknown.text());
    });

    await t.step("deleting the session on B deletes the image on the shared database", async () => {
      await agent.close();
      await waitFor(
        async () => {
          const res = await b.api("/api/sessions/img-1");
          return res.ok && (await res.json()).online === false;
        },
        "img-1 offline on B",
        10_000,
      );
      const del = await b.api("/api/sessions/img-1", { method: "DELETE" });
      assert.ok(del.ok, await del.text());
      await waitFor(
        async () => (await sql`SELECT 1 FROM image_blobs WHERE sha256 = ${sha}`).length === 0,
        "the image's blob gone from PostgreSQL",
        10_000,
      );
      assert.equal((await sql`SELECT 1 FROM session_images WHERE session_id = 'img-1'`).length, 0);
      const res = await a.api(`/api/sessions/img-1/images/${sha}`);
      assert.equal(res.status, 404, await res.text());
    });
  } finally {
    await agent.close();
    await other.close();
    await sql.end({ timeout: 5 });
  }
});
