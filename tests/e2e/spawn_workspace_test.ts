/**
 * Isolation of spawned sessions on the real engine: each session of one repository works in its own
 * working copy on its own `lvmh/<8 hex>` branch whose base is the daemon's record; a file one writes is in
 * neither the other's copy nor the repository cache; a later spawn that fetches new commits into the cache
 * moves no existing copy; and the copy goes with the session's storage.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { waitFor } from "../../testing/daemon.ts";
import { dockerTest, runOnce } from "../../testing/docker.ts";
import { post, startSpawnEnv } from "../../testing/spawn_env.ts";
import { git } from "../../testing/fixtures/git_http.ts";
import { createTar } from "../../docker/tar.ts";
import { CACHE_DIR } from "../../docker/clone.ts";
import { repoVolumeName } from "../../lib/spawn/docker_backend.ts";
import { workspaceBranch, type WorkspaceRecord, workVolumeName } from "../../lib/workspaces.ts";

dockerTest(
  "spawn: two sessions of one repository work in their own copies on their own branches",
  async (t) => {
    const env = await startSpawnEnv();
    const { d, engine } = env;
    const repo = env.repos[0];
    const cache = repoVolumeName(repo);
    const record = (sessionId: string) => {
      const db = new DatabaseSync(`${d.dataDir}/lvmh.db`, { readOnly: true });
      try {
        return db.prepare("SELECT * FROM session_workspaces WHERE sessionId = ?").get(sessionId) as
          | WorkspaceRecord
          | undefined;
      } finally {
        db.close();
      }
    };
    /** Run a shell line in a throwaway container with a session's working copy at /workspace. */
    const inCopy = async (sessionId: string, line: string) => {
      const out = await runOnce(engine, env.image, ["sh", "-c", `cd /workspace && ${line}`], [{
        volume: workVolumeName(sessionId),
        target: "/workspace",
      }]);
      assert.equal(out.code, 0, out.stderr);
      return out.stdout;
    };
    const spawn = async () => {
      const res = await post(d, "/api/spawn", { repo });
      const body = await res.json();
      assert.equal(res.status, 201, JSON.stringify(body));
      return body as { sessionId: string; containerId: string };
    };
    const cacheHead = async () =>
      (await runOnce(engine, env.image, ["git", `--git-dir=/c/${CACHE_DIR}`, "rev-parse", "main"], [{
        volume: cache,
        target: "/c",
      }])).stdout.trim();
    try {
      await post(d, "/api/gitlab/connect", { token: env.pat }).then((r) => r.body?.cancel());
      const a = await spawn();
      const b = await spawn();
      const base = await cacheHead();
      assert.match(base, /^[0-9a-f]{40}$/);

      await t.step(
        "each is on its own lvmh/ branch at the recorded base; the worker mounts only its copy",
        async () => {
          for (const s of [a, b]) {
            const r = record(s.sessionId);
            assert.ok(r, "recorded at spawn");
            assert.deepEqual(
              [r.repo, r.baseBranch, r.baseSha, r.branch],
              [repo, "main", base, workspaceBranch(s.sessionId)],
            );
            assert.match(r.branch, /^lvmh\/[0-9a-f]{8}$/);
            assert.equal(
              await inCopy(s.sessionId, "git symbolic-ref --short HEAD; git rev-parse HEAD"),
              `${r.branch}\n${base}\n`,
            );
            const info = await engine.containerInspect(s.containerId);
            const mounts = JSON.stringify(info.HostConfig);
            assert.ok(mounts.includes(workVolumeName(s.sessionId)), mounts);
            assert.ok(!mounts.includes(cache), "the cache is never mounted in a worker");
          }
          assert.notEqual(record(a.sessionId)!.branch, record(b.sessionId)!.branch);
          await waitFor(
            async () => {
              const list = (await (await d.api("/api/sessions")).json()) as {
                id: string;
                online: boolean;
                name: string;
              }[];
              const on = list.filter((s) => (s.id === a.sessionId || s.id === b.sessionId) && s.online);
              return on.length === 2 && on.every((s) => s.name === `readme of ${repo}`) ? on : null;
            },
            "both sessions online, reading their copies",
            20_000,
          );
        },
      );

      await t.step(
        "a file written in one session's /workspace is in neither the other's copy nor the cache",
        async () => {
          const data = new TextEncoder().encode("written by a\n");
          await engine.containerPutArchive(
            a.containerId,
            "/workspace",
            createTar([{ path: "from-a.txt", type: "file", data }]),
          );
          assert.equal(
            await inCopy(a.sessionId, "cat from-a.txt; git status --porcelain"),
            "written by a\n?? from-a.txt\n",
          );
          assert.equal(
            await inCopy(b.sessionId, "test ! -e from-a.txt && git status --porcelain && echo clean"),
            "clean\n",
          );
          const inCache = await runOnce(
            engine,
            env.image,
            ["sh", "-c", "find /c -name 'from-a*'; ls -A /c"],
            [{
              volume: cache,
              target: "/c",
            }],
          );
          assert.equal(
            inCache.stdout,
            `${CACHE_DIR}\n`,
            "no file of a session, and no working tree, in the cache",
          );
        },
      );

      await t.step(
        "a later spawn fetches new commits into the cache and moves no existing copy",
        async () => {
          const tmp = await Deno.makeTempDir({ prefix: "lvmh-ws-push-" });
          try {
            const remote = `${env.gitlab.url.replace("://", `://oauth2:${env.pat}@`)}/${repo}.git`;
            await git(["clone", "-q", remote, tmp]);
            await Deno.writeTextFile(`${tmp}/NEXT.md`, "next\n");
            await git(["-C", tmp, "add", "-A"]);
            await git([
              "-C",
              tmp,
              "-c",
              "user.name=t",
              "-c",
              "user.email=t@t.invalid",
              "commit",
              "-q",
              "-m",
              "next",
            ]);
            await git(["-C", tmp, "push", "-q", "origin", "main"]);
          } finally {
            await Deno.remove(tmp, { recursive: true });
          }
          const c = await spawn();
          const next = await cacheHead();
          assert.notEqual(next, base, "the cache was fetched");
          assert.equal(record(c.sessionId)!.baseSha, next, "the new session starts from the new head");
          assert.equal(
            await inCopy(c.sessionId, "cat NEXT.md; test ! -e from-a.txt && echo isolated"),
            "next\nisolated\n",
          );
          for (const s of [a, b]) {
            const out = await inCopy(
              s.sessionId,
              "git rev-parse HEAD origin/main; test ! -e NEXT.md && echo unmoved",
            );
            assert.equal(out, `${base}\n${base}\nunmoved\n`);
            assert.equal(record(s.sessionId)!.baseSha, base, "the record never moves");
          }
          assert.equal(
            await inCopy(a.sessionId, "cat from-a.txt"),
            "written by a\n",
            "the agent's work stays",
          );
        },
      );

      await t.step(
        "stopping a session keeps its working copy; deleting it removes the copy and its record",
        async () => {
          const stop = await d.api(`/api/sessions/${a.sessionId}/container`, { method: "DELETE" });
          assert.equal(stop.status, 200);
          await stop.body?.cancel();
          assert.ok(
            (await engine.volumeList({ "lvmh.session": a.sessionId })).includes(workVolumeName(a.sessionId)),
          );
          assert.ok(
            (await engine.volumeList({ "lvmh.kind": "work", "lvmh.repo": repo })).includes(
              workVolumeName(b.sessionId),
            ),
          );
          await waitFor(async () => {
            const list = (await (await d.api("/api/sessions")).json()) as { id: string; online: boolean }[];
            return list.find((x) => x.id === a.sessionId && !x.online);
          }, "a offline");
          const del = await d.api(`/api/sessions/${a.sessionId}`, { method: "DELETE" });
          assert.equal(del.status, 200, await del.text());
          assert.deepEqual(await engine.volumeList({ "lvmh.session": a.sessionId }), []);
          assert.equal(record(a.sessionId), undefined);
          assert.ok(record(b.sessionId), "the other session keeps its record");
        },
      );
    } finally {
      await env.close();
    }
    assert.deepEqual(await engine.volumeList({ "lvmh.repo": repo }), []);
  },
);
