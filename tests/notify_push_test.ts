/**
 * Web push through the in-process daemon, a scripted plugin and a loopback push service that checks VAPID and
 * decrypts each payload (RFC 8291): a browser gets only the kinds it picked, 410 deletes its subscription, 429
 * is retried, a second event of the same session and kind within 30 s is coalesced, and a browser whose page
 * is visible gets no push.
 */
import assert from "node:assert/strict";
import { startInProcess } from "../testing/inproc.ts";
import { waitFor } from "../testing/daemon.ts";
import { connectAgent, connectBrowser } from "../testing/agent.ts";
import { startPushService } from "../testing/fixtures/push_service.ts";

Deno.test("push: VAPID, encryption, kinds, 404/410, 429, coalescing, visibility", async (t) => {
  await using d = await startInProcess({ env: { LVMH_ASK: "bash" } });
  const gone = new Set<string>();
  const limited = new Set<string>();
  const service = startPushService((_n, path) => {
    if (gone.has(path)) return 410;
    if (limited.has(path)) {
      limited.delete(path);
      return 429;
    }
    return 201;
  });
  const subscribe = async (kinds: string[]) => {
    const sub = await service.makeSubscription();
    const res = await d.api("/api/push/subscriptions", {
      method: "POST",
      body: JSON.stringify({ subscription: { endpoint: sub.endpoint, keys: sub.keys }, kinds }),
    });
    assert.equal(res.status, 201);
    await res.body?.cancel();
    return sub;
  };
  const pushesTo = (endpoint: string) => service.received.filter((r) => endpoint.endsWith(r.path));
  const app = d.daemon.app;
  const a = await connectAgent(d, { sessionId: "np1" });
  try {
    const key = await (await d.api("/api/push/key")).json();
    assert.match(key.publicKey, /^[A-Za-z0-9_-]{87}$/, "an uncompressed P-256 key, base64url");

    const wantsApprovals = await subscribe(["approval.requested"]);
    const revoked = await subscribe(["approval.requested"]);
    gone.add(new URL(revoked.endpoint).pathname);
    const wantsSettled = await subscribe(["run.settled"]);
    const elsewhere = await subscribe(["run.settled"]);

    await t.step(
      "an approval request reaches the browsers that asked, VAPID-signed and encrypted",
      async () => {
        a.send("approval_request", { approvalId: "p1", toolCallId: "c1", toolName: "bash", args: {} });
        await waitFor(() => pushesTo(wantsApprovals.endpoint).length === 1, "the push");
        await app.push.idle();
        const got = pushesTo(wantsApprovals.endpoint)[0];
        assert.equal(got.vapidOk, true, got.vapidError ?? "");
        assert.equal(got.jwt!.k, key.publicKey, "signed with the daemon's VAPID key");
        assert.equal(got.headers["content-encoding"], "aes128gcm");
        assert.equal(got.headers["urgency"], "high");
        assert.ok(Number(got.headers["ttl"]) > 0);
        assert.match(got.headers["topic"], /^[A-Za-z0-9_-]{1,32}$/);
        assert.ok(got.payload, "the payload decrypts");
        assert.match(String(got.payload!.title), /needs approval/);
        const data = got.payload!.data as Record<string, unknown>;
        assert.equal(data.type, "approval.requested");
        assert.equal(data.url, "/sessions/np1#approval-p1");
        assert.equal(pushesTo(wantsSettled.endpoint).length, 0, "not a kind it picked");
      },
    );

    await t.step("410 deletes the subscription", async () => {
      assert.equal(pushesTo(revoked.endpoint)[0]?.status, 410);
      const q = encodeURIComponent(revoked.endpoint);
      assert.deepEqual(await (await d.api(`/api/push/subscriptions?endpoint=${q}`)).json(), { kinds: null });
      const kept = encodeURIComponent(wantsApprovals.endpoint);
      assert.deepEqual(await (await d.api(`/api/push/subscriptions?endpoint=${kept}`)).json(), {
        kinds: ["approval.requested"],
      });
    });

    await t.step("a second approval of the same session within 30 s is coalesced", async () => {
      a.send("approval_request", { approvalId: "p2", toolCallId: "c2", toolName: "bash", args: {} });
      await waitFor(async () => {
        const pending = await (await d.api("/api/approvals?state=pending")).json();
        return pending.some((p: { id: string }) => p.id === "p2");
      }, "p2 pending");
      await app.push.idle();
      assert.equal(pushesTo(wantsApprovals.endpoint).length, 1);
    });

    await t.step("a visible page gets no push; once hidden it does, and 429 is retried", async () => {
      await (await d.api("/api/push/visible", {
        method: "POST",
        body: JSON.stringify({ endpoint: wantsSettled.endpoint, visible: true }),
      })).body?.cancel();
      a.send("agent_start");
      a.send("agent_end");
      // The browser first: np2 coming online must reach it as a session_update, not in its first list.
      const browser = await connectBrowser(d.browserUrl);
      await browser.waitFrame((f) => f.type === "session_list", "the first list");
      const b = await connectAgent(d, { sessionId: "np2" });
      try {
        // The watcher follows a session from the broadcast that tells browsers it is online (not the first list).
        await browser.waitFrame(
          (f) =>
            f.type === "session_update" &&
            (f.sessions as { id: string; online: boolean }[]).some((s) => s.id === "np2" && s.online),
          "a session_update with np2 online",
        );
        // np1's run.settled was seen on the page (another browser, hidden, gets it); np2's goes out once hidden.
        await waitFor(() => pushesTo(elsewhere.endpoint).length === 1, "the push to the hidden browser");
        await app.push.idle();
        assert.equal(
          (pushesTo(elsewhere.endpoint)[0].payload!.data as { sessionId: string }).sessionId,
          "np1",
        );
        assert.equal(pushesTo(wantsSettled.endpoint).length, 0, "nothing while the page is visible");
        await (await d.api("/api/push/visible", {
          method: "POST",
          body: JSON.stringify({ endpoint: wantsSettled.endpoint, visible: false }),
        })).body?.cancel();
        limited.add(new URL(wantsSettled.endpoint).pathname);
        b.send("agent_start");
        b.send("agent_end");
        await waitFor(
          () => pushesTo(wantsSettled.endpoint).some((r) => r.status === 201),
          "retried push",
          15_000,
        );
        const tries = pushesTo(wantsSettled.endpoint);
        assert.deepEqual(tries.map((r) => r.status), [429, 201]);
        assert.match(String(tries[1].payload!.title), /finished/);
        assert.equal((tries[1].payload!.data as { sessionId: string }).sessionId, "np2");
      } finally {
        await b.close();
        await browser.close();
      }
    });
  } finally {
    await a.close();
    await service.close();
  }
});
