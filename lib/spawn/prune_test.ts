import assert from "node:assert/strict";
import { pruneSessions } from "../session_removal.ts";
import type { App } from "../app.ts";

Deno.test("pruneSessions() discards an old stopped spawned session (storage too) and deletes a terminal one", async () => {
  const deleted: string[] = [];
  const discarded: string[] = [];
  const old = { online: false, lastEventAt: 0, startedAt: 0 };
  const rows = [{ id: "term", ...old }, { id: "spawned", ...old }];
  const parts = {
    sessions: {
      list: () => rows,
      get: (id: string) => rows.find((r) => r.id === id) ?? null,
      isOnline: () => false,
      remove: (id: string) => deleted.push(id),
    },
    approvals: { sessionDeleted() {} },
    images: { sessionDeleted: () => Promise.resolve() },
    workspaces: { sessionDeleted() {} },
    spawner: {
      container: (id: string) => id === "spawned" ? { state: "stopped" } : undefined,
      discard: (id: string) => (discarded.push(id), Promise.resolve()),
    },
  } as unknown as Pick<App, "sessions" | "approvals" | "images" | "workspaces" | "spawner">;
  assert.deepEqual(pruneSessions(parts, 30, 100 * 24 * 3600_000).sort(), ["spawned", "term"]);
  // The discard runs in the background: wait for its delete, with a deadline.
  const deadline = Date.now() + 2000;
  while (deleted.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 1));
  assert.deepEqual(discarded, ["spawned"]);
  assert.deepEqual(deleted.sort(), ["spawned", "term"]);
});
