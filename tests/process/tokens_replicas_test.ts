/**
 * Named tokens, the audit log and the settings of two daemon processes on one real PostgreSQL database
 * (issue 23): a token created on A works on B; revoked on either, its sockets and streams close on both; B's
 * audit log lists what was done on A, in order; a GitLab connection or hook secret set on one replica is the
 * one the other reports.
 */
import assert from "node:assert/strict";
import { startPostgres } from "../../testing/postgres.ts";
import { waitFor } from "../../testing/daemon.ts";
import { connectBrowser } from "../../testing/agent.ts";
import { startReplicas } from "../../testing/replicas.ts";
import { startGitlabFixture } from "../../testing/fixtures/gitlab_fixture.ts";
import { connectPostgres } from "../../lib/storage/pg_client.ts";
import { PgAuditLog } from "../../lib/storage/pg_audit_log.ts";
import { Audit } from "../../lib/audit.ts";

/** How long a revocation on one replica may take to close what another one serves. */
const REVOKE_DEADLINE_MS = 3_000;

const GITLAB_TOKEN = "glpat-replicas-test-token";

Deno.test("replicas: tokens, audit and settings are the deployment's, not a replica's", async (t) => {
  await using pg = await startPostgres();
  const databaseUrl = await pg.newDatabase();
  const gitlab = startGitlabFixture({ token: GITLAB_TOKEN, username: "rita", projects: [] });
  try {
    await using set = await startReplicas(2, { databaseUrl, env: { LVMH_GITLAB_URL: gitlab.url } });
    const [a, b] = set.replicas.map((r) => r.daemon());
    const as = (d: typeof a, token: string, path: string, init: RequestInit = {}) =>
      fetch(`${d.url}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      });
    const create = async (name: string, role: string) => {
      const res = await a.api("/api/tokens", { method: "POST", body: JSON.stringify({ name, role }) });
      assert.equal(res.status, 201);
      return (await res.json()).token as string;
    };

    await t.step("a token created on A authenticates on B, with its role", async () => {
      const viewer = await create("vera", "viewer");
      const me = await as(b, viewer, "/api/me");
      assert.equal(me.status, 200);
      assert.deepEqual(
        (({ name, role }) => ({ name, role }))(await me.json()),
        { name: "vera", role: "viewer" },
      );
      const denied = await as(b, viewer, "/api/tokens");
      assert.equal(denied.status, 403, "a viewer on B is a viewer");
      await denied.body?.cancel();
      const listed = await (await b.api("/api/tokens")).json();
      assert.deepEqual(listed.map((x: { name: string }) => x.name), ["vera"]);
      assert.ok(!JSON.stringify(listed).includes(viewer), "no token value in a listing");
    });

    for (const [where, revoker] of [["A", a], ["B", b]] as const) {
      await t.step(
        `revoked on ${where}: its socket on B and its stream on A close, everywhere refused`,
        async () => {
          const name = `watch-${where.toLowerCase()}`;
          const token = await create(name, "viewer");
          const browser = await connectBrowser(`${b.url.replace("http", "ws")}/ws?token=${token}`);
          await browser.waitFrame((f) => f.type === "session_list", "B's socket open");
          const stream = await as(a, token, "/api/stream");
          assert.equal(stream.status, 200);
          const streamEnded = (async () => {
            for await (const _ of stream.body!) { /* read until the daemon ends it */ }
          })();
          // Both replicas have just accepted it: on A the stream, on B the socket (and B's cache has it).
          const seen = await as(b, token, "/api/sessions");
          assert.equal(seen.status, 200);
          await seen.body?.cancel();

          const started = performance.now();
          const res = await revoker.api(`/api/tokens/${name}`, { method: "DELETE" });
          assert.equal(res.status, 200);
          await res.body?.cancel();
          let timer: ReturnType<typeof setTimeout> | undefined;
          const deadline = new Promise<never>((_, reject) => {
            timer = setTimeout(
              () => reject(new Error("B's socket or A's stream still open")),
              REVOKE_DEADLINE_MS,
            );
          });
          try {
            const [closed] = await Promise.race([Promise.all([browser.closed, streamEnded]), deadline]);
            assert.equal(closed.code, 1008);
          } finally {
            clearTimeout(timer);
          }
          const tookMs = performance.now() - started;
          console.log(`revoked on ${where}: both closed in ${tookMs.toFixed(0)} ms`);
          for (const d of [a, b]) {
            const again = await as(d, token, "/api/sessions");
            assert.equal(again.status, 401, `refused on ${d.url}`);
            await again.body?.cancel();
          }
        },
      );
    }

    await t.step(
      "a revocation whose hint is lost (written in the table alone) closes sockets by the sweep",
      async () => {
        const token = await create("quiet", "viewer");
        const sockets = await Promise.all(
          [a, b].map((d) => connectBrowser(`${d.url.replace("http", "ws")}/ws?token=${token}`)),
        );
        await Promise.all(sockets.map((s) => s.waitFrame((f) => f.type === "session_list", "socket open")));
        const sql = connectPostgres(databaseUrl, { max: 1 });
        try {
          // What another process would do, without the NOTIFY: only the replicas' sweeps can find it.
          await sql`UPDATE tokens SET revoked_at = (extract(epoch FROM clock_timestamp()) * 1000)::bigint
          WHERE name = 'quiet'`;
        } finally {
          await sql.end();
        }
        const started = performance.now();
        await waitFor(
          () => sockets.every((s) => s.socket.readyState === WebSocket.CLOSED),
          "both closed",
          3_000,
        );
        console.log(
          `a silent revocation closed both replicas' sockets in ${
            (performance.now() - started).toFixed(0)
          } ms`,
        );
        for (const s of sockets) assert.equal((await s.closed).code, 1008);
        for (const d of [a, b]) {
          const again = await as(d, token, "/api/sessions");
          assert.equal(again.status, 401, `refused on ${d.url}`);
          await again.body?.cancel();
        }
      },
    );

    await t.step("B's audit log lists what was done on A, in order", async () => {
      const operator = await create("otto", "operator");
      const actions: [string, RequestInit][] = [
        ["/api/tokens", { method: "POST", body: JSON.stringify({ name: "t1", role: "viewer" }) }],
        ["/api/tokens/t1", { method: "DELETE" }],
        ["/api/tokens", { method: "POST", body: JSON.stringify({ name: "t2", role: "agent" }) }],
      ];
      for (const [path, init] of actions) {
        const res = await a.api(path, init);
        assert.ok(res.ok, path);
        await res.body?.cancel();
      }
      const wrong = await fetch(`${a.url}/api/sessions`, { headers: { authorization: "Bearer lvmh_nope" } });
      assert.equal(wrong.status, 401);
      await wrong.body?.cancel();
      const denied = await as(b, operator, "/api/audit");
      assert.equal(denied.status, 403, "an operator cannot read it on B either");
      await denied.body?.cancel();

      type Row = { id: number; action: string; actor: string; detail: { name?: string } | null };
      // Each action above was on record when A answered it; a refused sign-in's row is written as it is
      // refused, so it may land a moment after its 401.
      let rows: Row[] = [];
      await waitFor(
        async () => {
          rows = await (await b.api("/api/audit?after=0&limit=1000")).json();
          return rows.at(-1)?.action === "auth.failed";
        },
        "B lists A's refused sign-in",
        2_000,
      );
      const ids = rows.map((r) => r.id);
      assert.deepEqual(ids, [...ids].sort((x, y) => x - y), "in id order");
      const tail = rows.slice(-4).map((r) => `${r.action}:${r.detail?.name ?? r.actor}`);
      assert.deepEqual(tail, ["token.add:t1", "token.revoke:t1", "token.add:t2", "auth.failed:unknown"]);
      const earlier = rows.map((r) => `${r.action}:${r.detail?.name ?? ""}`);
      for (const name of ["vera", "watch-a", "watch-b", "quiet", "otto"]) {
        assert.ok(earlier.includes(`token.add:${name}`), `token.add ${name}`);
      }
      assert.ok(earlier.indexOf("token.revoke:watch-a") < earlier.indexOf("token.add:watch-b"));
      const onA = await (await a.api("/api/audit?after=0&limit=1000")).json();
      assert.deepEqual(onA, rows, "one log, the same on both");
    });

    await t.step("the GitLab connection made on A is B's; disconnected on B, A says so", async () => {
      const before = await (await b.api("/api/gitlab/status")).json();
      assert.equal(before.connected, false);
      const res = await a.api("/api/gitlab/connect", {
        method: "POST",
        body: JSON.stringify({ token: GITLAB_TOKEN }),
      });
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { username: "rita" });
      const started = performance.now();
      await waitFor(
        async () => (await (await b.api("/api/gitlab/status")).json()).username === "rita",
        "B reports the connection",
        2_000,
      );
      console.log(`GitLab connection seen on B in ${(performance.now() - started).toFixed(0)} ms`);
      assert.deepEqual(await (await b.api("/api/gitlab/status")).json(), {
        connected: true,
        baseUrl: gitlab.url,
        username: "rita",
      });
      const repos = await b.api("/api/gitlab/repos");
      assert.equal(repos.status, 200, "B uses the token stored through A");
      await repos.body?.cancel();
      assert.ok(
        !JSON.stringify(await (await b.api("/api/gitlab/status")).json()).includes(GITLAB_TOKEN),
        "the token is never shown",
      );

      const off = await b.api("/api/gitlab/connect", { method: "DELETE" });
      assert.equal(off.status, 200);
      await off.body?.cancel();
      await waitFor(
        async () => (await (await a.api("/api/gitlab/status")).json()).connected === false,
        "A reports the disconnection",
        2_000,
      );
    });

    await t.step("the GitLab hook secret set on B is the one A checks", async () => {
      const secret = "s".repeat(12) + crypto.randomUUID();
      const hook = (d: typeof a, token: string) =>
        fetch(`${d.url}/hooks/gitlab`, {
          method: "POST",
          headers: {
            "x-gitlab-event": "Push Hook",
            "x-gitlab-token": token,
            "content-type": "application/json",
          },
          body: JSON.stringify({ object_kind: "push" }),
        });
      const none = await hook(a, secret);
      assert.equal(none.status, 404, "no secret yet: the hook is off");
      await none.body?.cancel();
      const put = await b.api("/api/hooks/gitlab", { method: "PUT", body: JSON.stringify({ secret }) });
      assert.equal(put.status, 200);
      await put.body?.cancel();
      await waitFor(
        async () => (await (await a.api("/api/hooks/gitlab")).json()).source === "api",
        "A has the secret",
        2_000,
      );
      const wrong = await hook(a, "not-the-secret-at-all");
      assert.equal(wrong.status, 401);
      await wrong.body?.cancel();
      const right = await hook(a, secret);
      assert.ok(right.status < 300, `A accepts B's secret (${right.status})`);
      await right.body?.cancel();
      for (const d of [a, b]) {
        assert.ok(!(await (await d.api("/api/hooks/gitlab")).text()).includes(secret), "never shown back");
      }
    });
  } finally {
    await gitlab.close();
  }
});

Deno.test("audit on PostgreSQL: a burst of appends not waited for is stored in call order, read back at once", async () => {
  await using pg = await startPostgres();
  const url = await pg.newDatabase();
  const audit = new Audit(await PgAuditLog.open(url));
  try {
    // A pool of ten connections: appends sent side by side would commit in any order.
    for (let i = 0; i < 200; i++) void audit.append({ actor: "burst", role: "admin", action: `a${i}` });
    const rows = await audit.page(0, 1000);
    assert.deepEqual(rows.map((r) => r.action), Array.from({ length: 200 }, (_, i) => `a${i}`));
  } finally {
    await audit.close();
  }
});
