/**
 * Outbound webhooks on three replicas (daemon processes) sharing one real PostgreSQL database (issue 23: "a
 * webhook delivered once"): an endpoint created through B is listed on A and C; a plugin on A asks for
 * approvals and ends a run, and the receiver (which checks every signature) gets each notification exactly
 * once, although every replica sees every session's events; one VAPID key pair on every replica, and a
 * browser subscribed through C gets one push of a run's end on A, and none once its page told B it is shown;
 * the replica that claimed a delivery SIGKILLed
 * while the receiver holds the request open: another replica sends it again, with the same webhook-id, once
 * its claim ran out (`LVMH_WEBHOOK_LEASE_SECONDS`), and it is settled once.
 */
import assert from "node:assert/strict";
import { startPostgres } from "../../testing/postgres.ts";
import { waitFor } from "../../testing/daemon.ts";
import { connectAgent, connectBrowser } from "../../testing/agent.ts";
import { startReplicas } from "../../testing/replicas.ts";
import { startReceiver } from "../../testing/fixtures/webhook_receiver.ts";
import { startPushService } from "../../testing/fixtures/push_service.ts";
import { generateSecret } from "../../lib/webhooks/signing.ts";
import { connectPostgres } from "../../lib/storage/pg_client.ts";

/** The lease the replicas run with: short, so the takeover is seen within the test. */
const LEASE_S = 3;

const request = (approvalId: string) => ({
  approvalId,
  toolCallId: `call-${approvalId}`,
  toolName: "bash",
  args: { command: `echo ${approvalId}` },
});

Deno.test("webhooks on three replicas: each notification delivered once, a killed claimant's retried", async (t) => {
  await using pg = await startPostgres();
  const url = await pg.newDatabase();
  const sql = connectPostgres(url, { max: 1 });
  const secret = generateSecret();
  let holdAt = Infinity;
  const receiver = startReceiver({ secret, hold: (n) => n === holdAt });
  const service = startPushService();
  const cluster = await startReplicas(3, {
    databaseUrl: url,
    env: { LVMH_ASK: "bash", LVMH_WEBHOOK_LEASE_SECONDS: String(LEASE_S) },
  });
  const [a, b, c] = cluster.replicas;
  const browsers = await Promise.all(cluster.replicas.map((r) => connectBrowser(r.daemon().browserUrl)));
  const agent = await connectAgent(a.daemon(), { sessionId: "wh-rep" });
  try {
    const ofApproval = (id: string) => receiver.received.filter((r) => r.body.data.approvalId === id);
    let endpointId = "";

    await t.step("an endpoint created through B is listed, without its secret, on A and C", async () => {
      const res = await b.daemon().api("/api/webhooks", {
        method: "POST",
        body: JSON.stringify({ url: receiver.url, events: ["approval.requested", "run.settled"], secret }),
      });
      assert.equal(res.status, 201);
      endpointId = (await res.json()).id;
      for (const r of [a, c]) {
        const list = await (await r.daemon().api("/api/webhooks")).json();
        assert.deepEqual(list.map((e: { id: string }) => e.id), [endpointId], r.id);
        assert.equal(JSON.stringify(list).includes("whsec_"), false);
      }
    });

    await t.step("approvals and a run's end on A's plugin: one signed delivery each", async () => {
      // Every replica's watcher follows the session once its hub says it is online (a browser there hears the
      // same broadcast) before anything happens: each sees each event.
      for (const browser of browsers) {
        await browser.waitFrame(
          (f) =>
            f.type === "session_update" &&
            (f.sessions as { id: string; online: boolean }[]).some((s) => s.id === "wh-rep" && s.online),
          "wh-rep online in every replica's hub",
        );
      }
      for (const id of ["x1", "x2", "x3"]) agent.send("approval_request", request(id));
      agent.send("agent_start", {});
      agent.send("agent_end", {});
      await waitFor(
        () => ["x1", "x2", "x3"].every((id) => ofApproval(id).length === 1),
        "the three approvals delivered",
        15_000,
      );
      await waitFor(
        () => receiver.received.some((r) => r.body.type === "run.settled"),
        "the run's end",
        15_000,
      );
      // A copy from another replica would come as soon as the first (all see the frames at once): a marker
      // sent after everything above, delivered, leaves no time a copy could still be waiting for.
      agent.send("approval_request", request("marker"));
      await waitFor(() => ofApproval("marker").length === 1, "the marker delivered", 15_000);
      for (const id of ["x1", "x2", "x3", "marker"]) {
        assert.equal(ofApproval(id).length, 1, `one delivery of ${id}`);
      }
      assert.equal(
        receiver.received.filter((r) => r.body.type === "run.settled").length,
        1,
        "one run.settled",
      );
      assert.ok(
        receiver.received.every((r) => r.verified && r.status === 200),
        "every one signed and answered",
      );
      assert.equal(
        new Set(receiver.received.map((r) => r.id)).size,
        receiver.received.length,
        "distinct ids",
      );
      const [row] = await sql`SELECT count(*)::int AS n FROM webhook_outbox WHERE state = 'delivered'`;
      assert.equal(row.n, receiver.received.length, "one outbox row per delivery");
    });

    await t.step("web push: one key pair, a subscription made on C, one push per event", async () => {
      const keys = await Promise.all(
        cluster.replicas.map(async (r) => (await (await r.daemon().api("/api/push/key")).json()).publicKey),
      );
      assert.equal(new Set(keys).size, 1, "every replica signs with the one stored pair");
      const sub = await service.makeSubscription();
      const res = await c.daemon().api("/api/push/subscriptions", {
        method: "POST",
        body: JSON.stringify({
          subscription: { endpoint: sub.endpoint, keys: sub.keys },
          kinds: ["run.settled"],
        }),
      });
      assert.equal(res.status, 201);
      await res.body?.cancel();
      const q = `/api/push/subscriptions?endpoint=${encodeURIComponent(sub.endpoint)}`;
      assert.deepEqual(
        (await (await a.daemon().api(q)).json()).kinds,
        ["run.settled"],
        "A knows C's subscription",
      );
      agent.send("agent_start", {});
      agent.send("agent_end", {});
      await waitFor(() => service.received.length >= 1, "the push", 15_000);
      const [got] = service.received;
      assert.equal(got.vapidOk, true, got.vapidError ?? "");
      assert.equal(got.jwt!.k, keys[0]);
      // Copies from other replicas would be sent as soon as this one: the run's webhook and a marker sent
      // after it, delivered, leave them no time.
      const settled = () =>
        receiver.received.filter((r) => r.body.type === "run.settled" && r.status === 200);
      await waitFor(() => settled().length === 2, "the run's webhook", 15_000);
      agent.send("approval_request", request("marker2"));
      await waitFor(() => ofApproval("marker2").length === 1, "a later marker delivered", 15_000);
      assert.equal(service.received.length, 1, "one push");

      // Another session on A (a push per session and kind is coalesced for 30 s): the page reports it is
      // shown to B; A, which sends the pushes of its sessions, hears it.
      // A's watcher follows a session once the hub's `session_update` says it is online: a browser on A hears
      // the same broadcast.
      const browser = await connectBrowser(a.daemon().browserUrl);
      const other = await connectAgent(a.daemon(), { sessionId: "wh-vis" });
      try {
        await browser.waitFrame(
          (f) =>
            f.type === "session_update" &&
            (f.sessions as { id: string; online: boolean }[]).some((s) => s.id === "wh-vis" && s.online),
          "wh-vis online in A's hub",
        );
        const report = async (visible: boolean) => {
          const res = await b.daemon().api("/api/push/visible", {
            method: "POST",
            body: JSON.stringify({ endpoint: sub.endpoint, visible }),
          });
          assert.equal(res.status, 200);
          await res.body?.cancel();
        };
        await report(true);
        other.send("agent_start", {});
        other.send("agent_end", {});
        await waitFor(() => settled().length === 3, "the run's end happened (its webhook went out)", 15_000);
        agent.send("approval_request", request("marker3"));
        await waitFor(() => ofApproval("marker3").length === 1, "a later marker delivered", 15_000);
        assert.equal(service.received.length, 1, "no push to a page shown, whichever replica it told");
        // Hidden again (told to B): the next run's end is pushed.
        await report(false);
        other.send("agent_start", {});
        other.send("agent_end", {});
        await waitFor(() => service.received.length === 2, "the push once the page is hidden", 15_000);
        await waitFor(() => settled().length === 4, "its webhook", 15_000);
      } finally {
        await other.close();
        await browser.close();
      }
    });

    await t.step(
      "the claimant SIGKILLed mid-attempt: another replica retries it after the lease",
      async () => {
        holdAt = receiver.received.length + 1;
        agent.send("approval_request", request("k1"));
        const held = await waitFor(() => ofApproval("k1")[0], "the held attempt", 15_000);
        const [claim] = await sql`SELECT claimed_by, claim FROM webhook_outbox WHERE id = ${held.id}`;
        const claimant = cluster.replicas.find((r) => r.id === claim.claimed_by)!;
        assert.ok(claimant, `a replica claimed it (${claim.claimed_by})`);
        const killedAt = performance.now();
        await claimant.kill("SIGKILL");
        const retried = await waitFor(
          () => ofApproval("k1").find((r) => r.status === 200),
          "the retry from another replica",
          LEASE_S * 1000 + 15_000,
        );
        const after = performance.now() - killedAt;
        console.log(`retried ${after.toFixed(0)} ms after the SIGKILL (lease ${LEASE_S} s)`);
        assert.equal(retried.id, held.id, "the same webhook-id");
        assert.ok(retried.verified);
        // The receiver counts the answer before the replica stores it.
        const settled = await waitFor(async () => {
          const [row] = await sql`SELECT state, attempts, claim FROM webhook_outbox WHERE id = ${held.id}`;
          return row.state === "pending"
            ? undefined
            : (row as unknown as { state: string; attempts: number; claim: number });
        }, "the retry recorded");
        assert.equal(settled.state, "delivered");
        assert.equal(settled.attempts, 1, "the killed attempt never counted; the retry once");
        assert.ok(settled.claim > claim.claim, "claimed again");
        // The log on a live replica shows one attempt, answered 200.
        const live = cluster.replicas.find((r) => r !== claimant)!;
        const log = await (await live.daemon().api(`/api/webhooks/${endpointId}/deliveries`)).json();
        const attempts = log.filter((r: { deliveryId: string }) => r.deliveryId === held.id);
        assert.deepEqual(attempts.map((r: { status: number }) => r.status), [200]);
        // Nothing more goes out: a test delivery queued after it (through a live replica) arrives, and still
        // k1 came twice only (the plugin's replica may be the one killed, so the marker is not the plugin's).
        const res = await live.daemon().api(`/api/webhooks/${endpointId}/test`, { method: "POST" });
        const { deliveryId } = await res.json();
        await waitFor(
          () => receiver.received.some((r) => r.id === deliveryId && r.status === 200),
          "the marker",
        );
        assert.equal(ofApproval("k1").length, 2, "the held attempt and its one retry");
      },
    );
  } finally {
    await agent.close().catch(() => {});
    for (const browser of browsers) await browser.close().catch(() => {});
    await cluster.close();
    await receiver.close();
    await service.close();
    await sql.end({ timeout: 1 });
  }
});
