/**
 * Hook delivery keys across replicas: two daemon processes on one real PostgreSQL database. A generic hook's
 * spawn taken by replica A and retried with the same Idempotency-Key on replica B is a replay there: B answers
 * with A's session id and spawns nothing; so is a prompt hook's key. A new key on B is new.
 */
import assert from "node:assert/strict";
import { postgresBinDir, startPostgres } from "../../testing/postgres.ts";
import { startReplicas } from "../../testing/replicas.ts";

const HAVE_POSTGRES = (await postgresBinDir()) !== null;

Deno.test({
  name: "replicas: a hook's Idempotency-Key retried on another replica is a replay",
  ignore: !HAVE_POSTGRES,
  fn: async () => {
    await using pg = await startPostgres();
    await using replicas = await startReplicas(2, { databaseUrl: await pg.newDatabase() });
    const [a, b] = replicas.replicas;
    const hook = async (url: string, key: string, body: unknown) => {
      const r = await fetch(`${url}/hooks/generic`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${replicas.token}`,
          "content-type": "application/json",
          "idempotency-key": key,
        },
        body: JSON.stringify(body),
      });
      return { status: r.status, body: await r.json() as Record<string, unknown> };
    };
    const spawn = { spawn: { repo: "group/project" }, message: "fix the build" };

    const first = await hook(a.url, "delivery-1", spawn);
    assert.equal(first.status, 202, JSON.stringify(first.body));
    assert.equal(first.body.duplicate, undefined);
    assert.equal(typeof first.body.sessionId, "string");

    const retried = await hook(b.url, "delivery-1", spawn);
    assert.equal(retried.status, 202);
    assert.equal(retried.body.duplicate, true, "B knows A took the key");
    assert.equal(retried.body.sessionId, first.body.sessionId, "and names A's spawn");

    const other = await hook(b.url, "delivery-2", spawn);
    assert.equal(other.body.duplicate, undefined, "a new key is new");
    assert.notEqual(other.body.sessionId, first.body.sessionId);

    // A prompt hook's key: taken on A (whatever the prompt found), a replay on B.
    const prompt = { sessionId: "11111111-1111-4111-8111-111111111111", message: "hello" };
    await hook(a.url, "delivery-3", prompt);
    const replayed = await hook(b.url, "delivery-3", prompt);
    assert.equal(replayed.status, 202);
    assert.equal(replayed.body.duplicate, true);
  },
});
