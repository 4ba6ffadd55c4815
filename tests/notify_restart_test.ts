/**
 * Web push state survives a SIGKILL of the daemon process: the VAPID key pair is made once and kept (browsers
 * subscribed with it stay valid), and a subscription made before the kill gets the next event after restart.
 */
import assert from "node:assert/strict";
import { startDaemon, waitFor } from "../testing/daemon.ts";
import { connectAgent } from "../testing/agent.ts";
import { startPushService } from "../testing/fixtures/push_service.ts";

Deno.test("push: VAPID keys and subscriptions survive SIGKILL", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-push-restart-" });
  const service = startPushService();
  try {
    const sub = await service.makeSubscription();
    const first = await startDaemon({ dataDir, env: { LVMH_ASK: "bash" } });
    let key = "";
    try {
      key = (await (await first.api("/api/push/key")).json()).publicKey;
      const res = await first.api("/api/push/subscriptions", {
        method: "POST",
        body: JSON.stringify({
          subscription: { endpoint: sub.endpoint, keys: sub.keys },
          kinds: ["approval.requested"],
        }),
      });
      assert.equal(res.status, 201);
      await res.body?.cancel();
      assert.equal((await first.kill("SIGKILL")).signal, "SIGKILL");
    } finally {
      await first.stop();
    }
    await using second = await startDaemon({ dataDir, port: first.port, env: { LVMH_ASK: "bash" } });
    const again = (await (await second.api("/api/push/key")).json()).publicKey;
    assert.equal(again, key, "the same VAPID key after the restart");
    const a = await connectAgent(second, { sessionId: "npr" });
    try {
      a.send("approval_request", { approvalId: "q1", toolCallId: "c1", toolName: "bash", args: {} });
      const got = await waitFor(
        () => service.received.find((r) => r.status === 201),
        "the push after restart",
      );
      assert.equal(got.vapidOk, true, got.vapidError ?? "");
      assert.equal(got.jwt!.k, key);
      assert.equal((got.payload!.data as { url: string }).url, "/sessions/npr#approval-q1");
    } finally {
      await a.close();
    }
  } finally {
    await service.close();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
