/**
 * Model switch and rename from REST with the real pi 0.73.1 and 1.6.0 (RPC mode) and the fake LLM: the
 * session reports its models and thinking level; `PUT /model` answers 202, the plugin's command_result says
 * ok, `session_info` and the next LLM request carry the new model, and settings.json is left as it was (on
 * 0.73.1 also after pi rewrites it later); `PUT /name` renames the session through pi. A model pi knows but
 * has no key for (anthropic's, with no ANTHROPIC_API_KEY): the daemon answers 400 (the session never listed
 * it), and the plugin, asked directly through the daemon's link, answers `refused: no API key` as pi refuses.
 */
import assert from "node:assert/strict";
import { startDaemon, waitFor } from "../../testing/daemon.ts";
import { startInProcess } from "../../testing/inproc.ts";
import { startFakeLlm } from "../../testing/fixtures/fake_llm.mjs";
import { allEvents, assertInstalled, makePiHome, PI_VERSIONS, piRpc, sessions } from "../../testing/pi.ts";

type Ev = Record<string, unknown> & { seq: number; type: string };

for (const v of PI_VERSIONS) {
  Deno.test(`plugin on pi ${v.name}: model switch and rename from REST`, async (t) => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using home = await makePiHome(llm.url);
    const settingsFile = `${home.agentDir}/settings.json`;
    const settingsBefore = await Deno.readTextFile(settingsFile);
    await using d = await startDaemon();
    await using pi = piRpc(v, home, home.env(d));
    const online = await waitFor(async () => (await sessions(d)).find((s) => s.online), "pi online", 20_000);
    const id = online.id as string;
    const session = async () => await (await d.api(`/api/sessions/${id}`)).json();
    const result = (commandId: string) =>
      waitFor(
        async () =>
          (await allEvents(d, id) as Ev[]).find((e) =>
            e.type === "command_result" && e.commandId === commandId
          ),
        `command_result ${commandId}`,
      );
    const put = (what: string, body: unknown) =>
      d.api(`/api/sessions/${id}/${what}`, { method: "PUT", body: JSON.stringify(body) });

    await t.step("the session reports its models and thinking level", async () => {
      // The list leaves the models out; the session's own answer has them.
      assert.equal(online.models, undefined);
      const models = (await session()).models as {
        provider: string;
        id: string;
        hasAuth: boolean;
        input: string[];
      }[];
      const ids = models.map((m) => `${m.provider}/${m.id}`);
      assert.ok(ids.includes("fake/fake-model") && ids.includes("fake/fake-model-2"), JSON.stringify(ids));
      assert.ok(models.every((m) => m.hasAuth && m.input.includes("text")));
      assert.equal(online.model, "fake-model");
      assert.equal(typeof online.thinkingLevel, "string");
      assert.equal(online.modelSwitch, v.name === "0.73.1" ? "next_run" : "next_turn");
    });

    await t.step("a switch from REST reaches the next LLM request and session_info", async () => {
      const res = await put("model", { provider: "fake", model: "fake-model-2", thinking: "high" });
      assert.equal(res.status, 202, await res.clone().text());
      const { commandId } = await res.json();
      const r = await result(commandId);
      assert.equal(r.ok, true, JSON.stringify(r));
      const s = await waitFor(async () => {
        const s = await session();
        return s.model === "fake-model-2" ? s : null;
      }, "session_info with the new model");
      assert.equal(s.provider, "fake");
      assert.equal(s.thinkingLevel, "high");
      const before = llm.requests.length;
      const p = await d.api(`/api/sessions/${id}/prompt`, {
        method: "POST",
        body: JSON.stringify({ message: "TEXTONLY after the switch" }),
      });
      assert.equal(p.status, 200);
      await p.body?.cancel();
      const req = await waitFor(
        () => llm.requests.slice(before)[0] as { model: string } | undefined,
        "LLM request",
      );
      assert.equal(req.model, "fake-model-2");
      await waitFor(
        async () => (await allEvents(d, id) as Ev[]).some((e) => e.type === "agent_settled"),
        "run done",
      );
    });

    await t.step("settings.json is left as it was", async () => {
      assert.equal(await Deno.readTextFile(settingsFile), settingsBefore);
      if (v.name !== "0.73.1") return;
      // pi keeps the switched model as its in-memory default and writes settings again on other changes.
      const r = await pi.command({ type: "set_thinking_level", level: "low" });
      assert.equal(r.success, true, JSON.stringify(r));
      const after = await waitFor(async () => {
        const text = await Deno.readTextFile(settingsFile);
        const s = JSON.parse(text);
        return s.defaultThinkingLevel === "low" && s.defaultModel === "fake-model" ? s : null;
      }, "pi's later settings write, with the default model restored");
      assert.equal(after.defaultProvider, "fake");
    });

    await t.step("an unknown model is refused with 400 before pi hears of it", async () => {
      const res = await put("model", { provider: "fake", model: "no-such-model" });
      assert.equal(res.status, 400);
      await res.body?.cancel();
    });

    await t.step("a rename from REST goes through pi's session name", async () => {
      const res = await put("name", { name: "web name" });
      assert.equal(res.status, 202);
      const { commandId } = await res.json();
      assert.equal((await result(commandId)).ok, true);
      await waitFor(async () => (await session()).name === "web name", "session_info with the name");
      const state = await pi.command({ type: "get_state" });
      assert.equal((state.data as { sessionName?: string }).sessionName, "web name");
    });
    await pi.stop();
    await llm.close();
  });
}

/** A model both pi versions know (built in), whose provider has no key in the test's clean environment. */
const LOCKED = { provider: "anthropic", model: "claude-sonnet-4-5" };

for (const v of PI_VERSIONS) {
  Deno.test(`plugin on pi ${v.name}: a model without a key is refused with pi's reason`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using home = await makePiHome(llm.url);
    const settingsBefore = await Deno.readTextFile(`${home.agentDir}/settings.json`);
    await using d = await startInProcess();
    await using pi = piRpc(v, home, home.env(d));
    const online = await waitFor(async () => (await sessions(d)).find((s) => s.online), "pi online", 20_000);
    const id = online.id as string;
    const models = (await (await d.api(`/api/sessions/${id}`)).json()).models as {
      provider: string;
      id: string;
    }[];
    assert.ok(!models.some((m) => m.provider === LOCKED.provider), "only models with a key are listed");

    // Through REST: the daemon knows from the session's list that pi could not use it.
    const res = await d.api(`/api/sessions/${id}/model`, { method: "PUT", body: JSON.stringify(LOCKED) });
    assert.equal(res.status, 400);
    assert.match((await res.json()).error, /Unknown model "anthropic\/claude-sonnet-4-5"/);

    // Straight to the plugin over the session's live link, as a daemon that let it through would send it.
    const commandId = crypto.randomUUID();
    d.daemon.app.sessions.send(id, { type: "set_model", commandId, ...LOCKED });
    const r = await waitFor(
      async () =>
        (await allEvents(d, id) as Ev[]).find((e) =>
          e.type === "command_result" && e.commandId === commandId
        ),
      "command_result",
    );
    assert.deepEqual([r.ok, r.error], [false, "refused: no API key"]);
    const state = await pi.command({ type: "get_state" });
    assert.equal((state.data as { model?: { id?: string } }).model?.id, "fake-model", "pi kept its model");
    assert.equal((await (await d.api(`/api/sessions/${id}`)).json()).model, "fake-model");
    assert.equal(await Deno.readTextFile(`${home.agentDir}/settings.json`), settingsBefore);
    await pi.stop();
    await llm.close();
  });
}
