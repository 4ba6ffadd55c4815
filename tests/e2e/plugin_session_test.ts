/**
 * Session life on the real pi (RPC mode, 0.73.1 and 1.6.0): a rename and a model change reach the daemon
 * as `session_info`; `new_session` (the factory runs again) ends the old session with `bye` and registers
 * the new one with its own seq from 1, which then receives the daemon's prompts.
 */
import assert from "node:assert/strict";
import { startDaemon, waitFor } from "../../testing/daemon.ts";
import { startFakeLlm } from "../../testing/fixtures/fake_llm.mjs";
import { allEvents, assertInstalled, makePiHome, PI_VERSIONS, piRpc, sessions } from "../../testing/pi.ts";

type Ev = Record<string, unknown> & { seq: number; type: string };

for (const v of PI_VERSIONS) {
  Deno.test(`plugin on pi ${v.name}: rename, model change and new_session`, async (t) => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using home = await makePiHome(llm.url);
    await using d = await startDaemon();
    await using pi = piRpc(v, home, home.env(d));
    try {
      const first = (await waitFor(async () => (await sessions(d)).find((s) => s.online), "online"))
        .id as string;

      await t.step("a rename and a model change show up in the session list", async () => {
        assert.equal((await pi.command({ type: "set_session_name", name: "my task" })).success, true);
        await waitFor(
          async () => (await sessions(d)).find((s) => s.id === first)?.name === "my task",
          "the name",
        );
        const res = await pi.command({ type: "set_model", provider: "fake", modelId: "fake-model-2" });
        assert.equal(res.success, true, JSON.stringify(res));
        await waitFor(
          async () => (await sessions(d)).find((s) => s.id === first)?.model === "fake-model-2",
          "the model",
        );
        const infos = (await allEvents(d, first) as Ev[]).filter((e) => e.type === "session_info");
        assert.ok(infos.length >= 2, JSON.stringify(infos));
      });

      await t.step("new_session: bye for the old one, a fresh seq for the new one", async () => {
        assert.equal((await pi.command({ type: "new_session" })).success, true);
        const next = await waitFor(
          async () => (await sessions(d)).find((s) => s.id !== first && s.online),
          "the new session online",
        );
        const old = await waitFor(async () => {
          const evs = await allEvents(d, first) as Ev[];
          return evs.at(-1)?.type === "bye" ? evs : null;
        }, "bye for the old session");
        assert.equal(old.filter((e) => e.type === "bye").length, 1);
        await waitFor(
          async () => (await sessions(d)).find((s) => s.id === first && !s.online),
          "old offline",
        );

        const res = await d.api(`/api/sessions/${next.id}/prompt`, {
          method: "POST",
          body: JSON.stringify({ message: "TEXTONLY in the new session" }),
        });
        assert.equal(res.status, 200);
        await res.body?.cancel();
        const evs = await waitFor(async () => {
          const all = await allEvents(d, next.id as string) as Ev[];
          return all.some((e) => e.type === "agent_settled") ? all : null;
        }, "the new session answers");
        assert.equal(evs[0].seq, 1);
        const texts = evs.filter((e) => e.type === "message_end").map((e) =>
          (e.message as { text: string }).text
        );
        assert.ok(texts.includes("You said: TEXTONLY in the new session"), JSON.stringify(texts));
        // 0.73.1 fires session_start twice here: still one hello, one connection, no duplicate events
        const seqs = evs.map((e) => e.seq);
        assert.equal(new Set(seqs).size, seqs.length);
        assert.equal(evs.filter((e) => e.type === "agent_start").length, 1);
      });
      assert.equal(await pi.stop(), 0);
    } finally {
      await llm.close();
    }
  });
}
