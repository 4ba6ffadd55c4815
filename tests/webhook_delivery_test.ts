/**
 * Outbound webhooks through the in-process daemon and a scripted plugin: admins register endpoints (the
 * secret is shown once), an approval request becomes a signed delivery, a receiver that fails the first two
 * attempts sees exactly one success with the same webhook-id, and redirects are never followed.
 */
import assert from "node:assert/strict";
import { startInProcess } from "../testing/inproc.ts";
import { waitFor } from "../testing/daemon.ts";
import { connectAgent } from "../testing/agent.ts";
import { startReceiver } from "../testing/fixtures/webhook_receiver.ts";
import { generateSecret } from "../lib/webhooks/signing.ts";

const request = (approvalId: string) => ({
  approvalId,
  toolCallId: `call-${approvalId}`,
  toolName: "bash",
  args: { command: "echo hi" },
});

Deno.test("webhooks: register, list, sign, retry, log, delete", async (t) => {
  await using d = await startInProcess({ env: { LVMH_ASK: "bash" } });
  const secret = generateSecret();
  const receiver = startReceiver({ secret, failFirst: 2 });
  const a = await connectAgent(d, { sessionId: "wh1" });
  try {
    let id = "";
    await t.step("POST /api/webhooks: 201 with the secret; a generated one when absent", async () => {
      const res = await d.api("/api/webhooks", {
        method: "POST",
        body: JSON.stringify({ url: receiver.url, events: ["approval.requested", "run.settled"], secret }),
      });
      assert.equal(res.status, 201);
      const body = await res.json();
      assert.equal(body.secret, secret);
      assert.deepEqual(body.events, ["approval.requested", "run.settled"]);
      id = body.id;
      const other = await d.api("/api/webhooks", {
        method: "POST",
        body: JSON.stringify({ url: "http://127.0.0.1:9/x", events: ["spawn.failed"] }),
      });
      const generated = await other.json();
      assert.match(generated.secret, /^whsec_[A-Za-z0-9+/]{32}$/);
      const del = await d.api(`/api/webhooks/${generated.id}`, { method: "DELETE" });
      assert.equal(del.status, 204);
    });

    await t.step("bad bodies are 400; GET lists without secrets", async () => {
      for (
        const body of [{ url: "ftp://x", events: ["run.settled"] }, { url: receiver.url, events: [] }, {
          url: receiver.url,
          events: ["nope"],
        }, { url: receiver.url, events: ["run.settled"], secret: "plain" }]
      ) {
        const res = await d.api("/api/webhooks", { method: "POST", body: JSON.stringify(body) });
        assert.equal(res.status, 400, JSON.stringify(body));
        await res.body?.cancel();
      }
      const list = await (await d.api("/api/webhooks")).json();
      assert.deepEqual(list.map((e: { id: string }) => e.id), [id]);
      assert.equal(JSON.stringify(list).includes("whsec_"), false);
    });

    await t.step("an approval request is delivered signed; two 500s, then exactly one success", async () => {
      a.send("approval_request", request("r1"));
      await waitFor(() => receiver.successes().length === 1, "a successful delivery", 15_000);
      const all = receiver.received;
      assert.equal(all.length, 3, "two failures and one success");
      assert.deepEqual(all.map((r) => r.status), [500, 500, 200]);
      assert.equal(new Set(all.map((r) => r.id)).size, 1, "every attempt carries the same webhook-id");
      assert.ok(all.every((r) => r.verified), "every signature verifies");
      const body = all[2].body;
      assert.equal(body.type, "approval.requested");
      assert.equal(body.sessionId, "wh1");
      assert.equal(body.data.toolName, "bash");
      assert.equal(body.data.approvalId, "r1");
      assert.ok(all[1].timestamp - all[0].timestamp >= 0);
    });

    await t.step("the delivery log lists each attempt with status and latency", async () => {
      const log = await waitFor(async () => {
        const rows = await (await d.api(`/api/webhooks/${id}/deliveries`)).json();
        return rows.length === 3 && rows;
      }, "three log rows");
      assert.deepEqual(log.map((r: { status: number }) => r.status), [200, 500, 500]);
      assert.ok(
        log.every((r: { latencyMs: number; state: string }) => r.latencyMs >= 0 && r.state === "delivered"),
      );
    });

    await t.step(
      "the list shows each endpoint's latest attempt; a test delivery is signed and logged",
      async () => {
        const [listed] = await (await d.api("/api/webhooks")).json();
        assert.equal(listed.last.status, 200);
        assert.equal(listed.last.type, "approval.requested");
        assert.equal(listed.last.state, "delivered");
        const res = await d.api(`/api/webhooks/${id}/test`, { method: "POST" });
        assert.equal(res.status, 202);
        const { deliveryId } = await res.json();
        assert.match(deliveryId, /^msg_/);
        const test = await waitFor(
          () => receiver.successes().find((r) => r.body.type === "webhook.test"),
          "the test delivery",
          15_000,
        );
        assert.equal(test.id, deliveryId);
        assert.ok(test.verified, "the test delivery is signed with the endpoint's secret");
        assert.equal(test.body.sessionId, null);
        const last = await waitFor(async () => {
          const [e] = await (await d.api("/api/webhooks")).json();
          return e.last?.deliveryId === deliveryId && e.last;
        }, "the test as the latest attempt");
        assert.equal(last.status, 200);
        const missing = await d.api("/api/webhooks/wh_nope/test", { method: "POST" });
        assert.equal(missing.status, 404);
        await missing.body?.cancel();
      },
    );

    await t.step("viewers and operators cannot list or add endpoints", async () => {
      const made = await (await d.api("/api/tokens", {
        method: "POST",
        body: JSON.stringify({ name: "op", role: "operator" }),
      })).json();
      const res = await d.fetch("/api/webhooks", { headers: { authorization: `Bearer ${made.token}` } });
      assert.equal(res.status, 403);
      await res.body?.cancel();
      const test = await d.fetch(`/api/webhooks/${id}/test`, {
        method: "POST",
        headers: { authorization: `Bearer ${made.token}` },
      });
      assert.equal(test.status, 403);
      await test.body?.cancel();
    });

    await t.step("DELETE removes it; a second DELETE is 404", async () => {
      assert.equal((await d.api(`/api/webhooks/${id}`, { method: "DELETE" })).status, 204);
      const again = await d.api(`/api/webhooks/${id}`, { method: "DELETE" });
      assert.equal(again.status, 404);
      await again.body?.cancel();
    });
  } finally {
    await a.close();
    await receiver.close();
  }
});

Deno.test("webhooks: a redirect is not followed and counts as a failure", async () => {
  await using d = await startInProcess({ env: { LVMH_ASK: "bash" } });
  const secret = generateSecret();
  const target = startReceiver({ secret });
  const receiver = startReceiver({ secret, redirectTo: target.url });
  const a = await connectAgent(d, { sessionId: "wh2" });
  try {
    const res = await d.api("/api/webhooks", {
      method: "POST",
      body: JSON.stringify({ url: receiver.url, events: ["approval.requested"], secret }),
    });
    const { id } = await res.json();
    a.send("approval_request", request("r2"));
    const log = await waitFor(async () => {
      const rows = await (await d.api(`/api/webhooks/${id}/deliveries`)).json();
      return rows.length >= 1 && rows;
    }, "a logged attempt");
    assert.equal(log[0].status, 307);
    assert.match(log[0].error, /redirect/);
    assert.equal(log[0].state, "pending", "it will be retried");
    assert.equal(target.received.length, 0, "the redirect target never got the request");
  } finally {
    await a.close();
    await receiver.close();
    await target.close();
  }
});
