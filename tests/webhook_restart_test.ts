/**
 * The outbox survives a SIGKILL of the daemon process: an endpoint registered and an event queued before the
 * kill (its first attempt still in flight) is delivered after the restart, with the same webhook-id, and the
 * receiver sees exactly one success.
 */
import assert from "node:assert/strict";
import { startDaemon, waitFor } from "../testing/daemon.ts";
import { connectAgent } from "../testing/agent.ts";
import { startReceiver } from "../testing/fixtures/webhook_receiver.ts";
import { generateSecret } from "../lib/webhooks/signing.ts";

Deno.test("webhooks: SIGKILL between enqueue and delivery, delivered once after restart", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-webhook-restart-" });
  const secret = generateSecret();
  // The first request is held open: the daemon dies while waiting for its answer.
  const receiver = startReceiver({ secret, hold: (n) => n === 1 });
  try {
    // A short lease: on a shared database the restarted daemon is another replica, which takes the killed
    // one's delivery again only once its claim ran out (a lone daemon on its file needs no wait).
    const env = { LVMH_ASK: "bash", LVMH_WEBHOOK_LEASE_SECONDS: "2" };
    const first = await startDaemon({ dataDir, env });
    let endpointId = "";
    try {
      const res = await first.api("/api/webhooks", {
        method: "POST",
        body: JSON.stringify({ url: receiver.url, events: ["approval.requested"], secret }),
      });
      assert.equal(res.status, 201);
      endpointId = (await res.json()).id;
      const a = await connectAgent(first, { sessionId: "whk" });
      a.send("approval_request", { approvalId: "k1", toolCallId: "c1", toolName: "bash", args: {} });
      await waitFor(() => receiver.received.length === 1, "the first attempt reaches the receiver");
      const status = await first.kill("SIGKILL");
      assert.equal(status.signal, "SIGKILL");
      await a.closed;
    } finally {
      await first.stop();
    }
    assert.equal(receiver.successes().length, 0, "nothing was answered before the kill");

    await using second = await startDaemon({ dataDir, port: first.port, env });
    await waitFor(() => receiver.successes().length === 1, "delivered after the restart", 15_000);
    const log = await waitFor(async () => {
      const rows = await (await second.api(`/api/webhooks/${endpointId}/deliveries`)).json();
      return rows.length >= 1 && rows[0].state === "delivered" && rows;
    }, "the log shows it delivered");
    assert.equal(log.length, 1, "the killed attempt was never recorded; the one after the restart was");
    assert.equal(log[0].status, 200);
    const ids = new Set(receiver.received.map((r) => r.id));
    assert.equal(ids.size, 1, "both attempts carry the same webhook-id");
    assert.equal(receiver.successes().length, 1, "exactly one success");
    assert.ok(receiver.received.every((r) => r.verified));
    assert.equal(receiver.received[1].body.data.approvalId, "k1");
    const list = await (await second.api("/api/webhooks")).json();
    assert.deepEqual(list.map((e: { id: string }) => e.id), [endpointId], "the endpoint survived too");
  } finally {
    await receiver.close();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
