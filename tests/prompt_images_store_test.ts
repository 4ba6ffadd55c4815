/**
 * The images of web prompts, kept by the daemon (a real subprocess, a scripted plugin): stored before the
 * prompt frame reaches the plugin, so after a SIGKILL and a restart every image a prompt was accepted with is
 * served by `GET /api/sessions/:id/images/:sha256` — to viewers, with its type, nosniff and an immutable
 * cache — and 404 for another session, 400 for a name that is not a sha256; an offline session's refused
 * prompt keeps nothing; deleting the session deletes its images, and so does retention (keeping what another
 * session still holds).
 */
import assert from "node:assert/strict";
import { connectAgent, sessionInfo } from "../testing/agent.ts";
import { DatabaseSync } from "node:sqlite";
import { bearerFetch, freePort, startDaemon } from "../testing/daemon.ts";
import { startInProcess } from "../testing/inproc.ts";

const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const GIF = btoa("GIF89a" + "\x01\x00\x01\x00\x00\x00\x00;");
const bytesOf = (b64: string) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));

async function sha256(b64: string): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", bytesOf(b64)));
  return Array.from(d, (b) => b.toString(16).padStart(2, "0")).join("");
}

Deno.test("prompt images survive a daemon SIGKILL and are served only for their session", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-images-kill-" });
  const port = freePort();
  try {
    const d1 = await startDaemon({ dataDir, port });
    const agent = await connectAgent(d1, { sessionId: "img-a", session: sessionInfo("img-a") });
    const other = await connectAgent(d1, { sessionId: "img-b", session: sessionInfo("img-b") });
    const res = await d1.api("/api/sessions/img-a/prompt", {
      method: "POST",
      body: JSON.stringify({
        message: "two pictures",
        images: [{ mimeType: "image/png", data: PNG }, { mimeType: "image/gif", data: GIF }],
      }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    const { promptId } = await res.json();
    const frame = await agent.waitFrame((f) => f.type === "prompt" && f.promptId === promptId, "the prompt");
    assert.equal(frame.by, "bootstrap", "the frame names who sent it");
    // An offline session's prompt is refused, and keeps nothing.
    await other.close();
    const refused = await d1.api("/api/sessions/img-b/prompt", {
      method: "POST",
      body: JSON.stringify({
        message: "x",
        images: [{ mimeType: "image/gif", data: btoa("GIF87a--offline") }],
      }),
    });
    assert.equal(refused.status, 409);
    await refused.body?.cancel();
    await agent.close().catch(() => {});
    const status = await d1.kill("SIGKILL");
    assert.equal(status.signal, "SIGKILL");

    await using d2 = await startDaemon({ dataDir, port });
    const viewer = await d2.api("/api/tokens", {
      method: "POST",
      body: JSON.stringify({ name: "vera", role: "viewer" }),
    });
    const asViewer = bearerFetch(d2.url, (await viewer.json()).token);
    const [png, gif] = [await sha256(PNG), await sha256(GIF)];
    for (const [sha, type, b64] of [[png, "image/png", PNG], [gif, "image/gif", GIF]]) {
      const img = await asViewer(`/api/sessions/img-a/images/${sha}`);
      assert.equal(img.status, 200, `${type} after the kill`);
      assert.equal(img.headers.get("content-type"), type);
      assert.equal(img.headers.get("x-content-type-options"), "nosniff");
      assert.match(img.headers.get("cache-control") ?? "", /max-age=31536000, immutable/);
      assert.deepEqual(new Uint8Array(await img.arrayBuffer()), bytesOf(b64));
    }
    const answers = async (path: string) => {
      const r = await asViewer(path);
      const body = await r.json();
      assert.equal(typeof body.error, "string");
      return r.status;
    };
    assert.equal(await answers(`/api/sessions/img-b/images/${png}`), 404, "not an image of that session");
    assert.equal(await answers(`/api/sessions/img-a/images/${"0".repeat(64)}`), 404);
    assert.equal(await answers(`/api/sessions/ghost/images/${png}`), 404);
    assert.equal(await answers(`/api/sessions/img-a/images/${png.toUpperCase()}`), 400);
    assert.equal(await answers(`/api/sessions/img-a/images/..%2Fevents`), 400);
    const none = await fetch(`${d2.url}/api/sessions/img-a/images/${png}`);
    assert.equal(none.status, 401, "a token is needed");
    await none.body?.cancel();
    const audit = await (await d2.api("/api/audit?limit=1000")).json() as {
      action: string;
      detail: unknown;
    }[];
    const row = audit.find((r) => r.action === "prompt")!;
    assert.deepEqual((row.detail as { images: unknown }).images, [
      { sha256: png, mimeType: "image/png", bytes: 70 },
      { sha256: gif, mimeType: "image/gif", bytes: bytesOf(GIF).length },
    ]);

    // Deleting the session deletes its images.
    const del = await d2.api("/api/sessions/img-a", { method: "DELETE" });
    assert.equal(del.status, 200);
    await del.body?.cancel();
    assert.equal(await answers(`/api/sessions/img-a/images/${png}`), 404);
  } finally {
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});

Deno.test("retention deletes an idle session's images, and keeps those another session still holds", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-images-retention-" });
  try {
    const d1 = await startInProcess({ dataDir });
    const old = Date.now() - 40 * 24 * 60 * 60 * 1000;
    const stale = await connectAgent(d1, {
      sessionId: "stale",
      session: sessionInfo("stale", { startedAt: old }),
    });
    const fresh = await connectAgent(d1, { sessionId: "fresh" });
    const seqs = [stale.send("agent_start", { ts: old }), fresh.send("agent_start")];
    await Promise.all(
      [stale, fresh].map((a, i) => a.waitFrame((f) => f.type === "ack" && f.lastSeq === seqs[i])),
    );
    const prompt = (id: string, images: { mimeType: string; data: string }[]) =>
      d1.api(`/api/sessions/${id}/prompt`, {
        method: "POST",
        body: JSON.stringify({ message: "look", images }),
      });
    for (
      const res of [
        await prompt("stale", [{ mimeType: "image/png", data: PNG }, { mimeType: "image/gif", data: GIF }]),
        await prompt("fresh", [{ mimeType: "image/png", data: PNG }]),
      ]
    ) {
      assert.equal(res.status, 200);
      await res.body?.cancel();
    }
    await Promise.all([stale.close(), fresh.close()]);
    await d1.stop();

    const d2 = await startInProcess({ dataDir, env: { LVMH_RETENTION_DAYS: "30" } });
    try {
      assert.match(d2.output(), /deleted 1 session\(s\) idle/);
      const png = await sha256(PNG);
      assert.equal((await d2.api(`/api/sessions/fresh/images/${png}`)).status, 200);
    } finally {
      await d2.stop();
    }
    const db = new DatabaseSync(`${dataDir}/lvmh.db`);
    try {
      const rows = db.prepare("SELECT sha256 FROM image_blobs").all() as { sha256: string }[];
      assert.deepEqual(
        rows.map((r) => r.sha256),
        [await sha256(PNG)],
        "the GIF only the stale session had is gone",
      );
      const links = db.prepare("SELECT sessionId FROM session_images").all() as { sessionId: string }[];
      assert.deepEqual(links.map((r) => r.sessionId), ["fresh"]);
    } finally {
      db.close();
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
