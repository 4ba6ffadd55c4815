/**
 * The two ends of a kept hook prompt on the real pi (0.73.1 and 1.6.0, RPC mode) with the plugin:
 *   1. SIGKILL after the prompt's `command_result` was stored but before its row was dropped (held here by a
 *      trigger that fails the daemon's delete, as a kill between the two writes would leave it): the restarted
 *      daemon finds the answer in the event log, drops the row and never sends the prompt again.
 *   2. pi's `/reload` while the prompt arrives: the plugin refuses it ("no live pi session"); the daemon tries
 *      again with backoff, and pi gets it after the reload, exactly once. A second extension's command runs
 *      `ctx.reload()` and holds pi inside the reload (its `session_shutdown` waits for a file), so the prompt
 *      surely lands in that window.
 * Exactly once is read from pi itself (the user messages of the conversation it sends the LLM), from the
 * stored events, and from the audit log's sends.
 */
import assert from "node:assert/strict";
import { freePort, startDaemon, waitFor } from "../../testing/daemon.ts";
import { startFakeLlm } from "../../testing/fixtures/fake_llm.mjs";
import { allEvents, assertInstalled, makePiHome, PI_VERSIONS, piRpc, sessions } from "../../testing/pi.ts";
import { holdKeptRows, keepPrompt, keptIds } from "../../testing/kept_prompt.ts";

type LlmRequest = { messages: { role: string; content: unknown }[] };
type Ev = { type: string; seq: number; commandId?: string; ok?: boolean; error?: string; message?: Msg };
type Msg = { role: string; text: string };
type AuditRow = { action: string; detail: { promptId?: string } };

/** The user messages of the last conversation pi sent the LLM. */
function lastUserTexts(requests: LlmRequest[]): string[] {
  const last = requests.at(-1);
  return (last?.messages ?? []).filter((m) => m.role === "user").map((m) =>
    typeof m.content === "string"
      ? m.content
      : (m.content as { type: string; text?: string }[]).map((p) => p.text ?? "").join("")
  );
}

/** A pi extension: `/hold-reload` reloads pi and keeps it inside the reload until `release` exists. */
const HOLD_RELOAD = `
import { existsSync, writeFileSync } from "node:fs";
const held = process.env.HOLD_RELOAD_HELD, release = process.env.HOLD_RELOAD_RELEASE;
export default function (pi) {
  pi.registerCommand("hold-reload", {
    description: "reload, held until released",
    handler: async (_args, ctx) => { await ctx.reload(); },
  });
  pi.on("session_shutdown", async (e) => {
    if (e.reason !== "reload" || existsSync(release)) return;
    writeFileSync(held, "");
    const until = Date.now() + 60000;
    while (!existsSync(release) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  });
}
`;

for (const v of PI_VERSIONS) {
  Deno.test(`hooks on pi ${v.name}: a kept prompt answered before a SIGKILL is not sent again`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    const dir = await Deno.makeTempDir({ prefix: "lvmh-hooks-kept-pi-" });
    const port = freePort();
    const start = () => startDaemon({ dataDir: dir, port });
    await using home = await makePiHome(llm.url);
    let daemon = await start();
    await using pi = piRpc(v, home, home.env({ agentUrl: daemon.agentUrl, token: daemon.token }));
    try {
      const online = () => sessions(daemon).then((l) => l.find((s) => s.online));
      const id = (await waitFor(online, "pi online", 20_000)).id as string;
      const text = "TEXTONLY kept prompt answered before the kill";
      await daemon.stop();
      const promptId = keepPrompt(dir, id, text);
      holdKeptRows(dir, true);
      daemon = await start();
      const events = () => allEvents(daemon, id) as Promise<Ev[]>;
      await waitFor(
        async () =>
          (await events()).some((e) => e.type === "command_result" && e.commandId === promptId && e.ok),
        "pi took the prompt and its answer is stored",
        30_000,
      );
      await waitFor(
        async () => (await events()).some((e) => e.type === "agent_settled"),
        "the run ends",
        30_000,
      );
      assert.equal((await daemon.kill("SIGKILL")).signal, "SIGKILL");
      await daemon.stop();
      assert.deepEqual(keptIds(dir), [promptId], "the kill left the row");

      holdKeptRows(dir, false);
      daemon = await start();
      await waitFor(() => keptIds(dir).length === 0, "dropped at start", 20_000);
      await waitFor(() => sessions(daemon).then((l) => l.some((s) => s.id === id && s.online)), "pi back");
      // Anything sent at the reconnect would be in the audit log by now; the session is idle and stays so.
      const audit = await (await daemon.api("/api/audit?limit=1000")).json() as AuditRow[];
      const sends = audit.filter((e) => e.action === "hook.prompt" && e.detail.promptId === promptId);
      assert.equal(sends.length, 1, "sent once, before the kill");
      assert.match(daemon.output(), /was taken before the restart: not sent again/);
      const texts = lastUserTexts(llm.requests as LlmRequest[]);
      assert.equal(texts.filter((t) => t.includes(text)).length, 1, "pi has it once");
      const users = (await events()).filter((e) =>
        e.type === "message_end" && e.message?.role === "user" && e.message.text.includes(text)
      );
      assert.equal(users.length, 1, "one user message");
      assert.ok(!home.pluginLog().includes(`prompt ${promptId} came again`), "the plugin never saw it again");
    } finally {
      await pi.stop();
      await daemon.stop();
      await llm.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  });

  Deno.test(`hooks on pi ${v.name}: a kept prompt refused during /reload arrives after it, once`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    const dir = await Deno.makeTempDir({ prefix: "lvmh-hooks-reload-pi-" });
    const port = freePort();
    const start = () => startDaemon({ dataDir: dir, port });
    await using home = await makePiHome(llm.url);
    const ext = `${home.dir}/hold_reload.mjs`, held = `${home.dir}/held`, release = `${home.dir}/release`;
    await Deno.writeTextFile(ext, HOLD_RELOAD);
    let daemon = await start();
    const env = home.env(
      { agentUrl: daemon.agentUrl, token: daemon.token },
      { HOLD_RELOAD_HELD: held, HOLD_RELOAD_RELEASE: release },
    );
    await using pi = piRpc(v, home, env, ["-e", ext]);
    try {
      const online = () => sessions(daemon).then((l) => l.find((s) => s.online));
      const id = (await waitFor(online, "pi online", 20_000)).id as string;
      const text = "TEXTONLY kept prompt across a reload";
      await daemon.stop();
      const promptId = keepPrompt(dir, id, text);
      // pi goes into /reload and stays there; the daemon comes back meanwhile and sends the prompt.
      const reloading = pi.command({ type: "prompt", message: "/hold-reload" }).catch(() => null);
      await waitFor(() => Deno.stat(held).then(() => true, () => false), "pi held in /reload", 20_000);
      daemon = await start();
      const events = () => allEvents(daemon, id) as Promise<Ev[]>;
      const refusal = await waitFor(
        async () =>
          (await events()).find((e) => e.type === "command_result" && e.commandId === promptId && !e.ok),
        "the plugin refused it during the reload",
        30_000,
      );
      assert.match(String(refusal.error), /no live pi session/);
      assert.deepEqual(keptIds(dir), [promptId], "still kept after the refusal");
      await Deno.writeTextFile(release, "");
      await reloading;

      await waitFor(() => keptIds(dir).length === 0, "taken after the reload", 30_000);
      const stored = await waitFor(
        async () =>
          (await events()).find((e) =>
            e.type === "message_end" && e.message?.role === "user" && e.message.text.includes(text)
          ),
        "the user message stored",
        30_000,
      );
      await waitFor(
        async () => (await events()).some((e) => e.type === "agent_settled" && e.seq > stored.seq),
        "the run ends",
        30_000,
      );
      const texts = lastUserTexts(llm.requests as LlmRequest[]);
      assert.equal(texts.filter((t) => t.includes(text)).length, 1, "pi has it once");
      const users = (await events()).filter((e) =>
        e.type === "message_end" && e.message?.role === "user" && e.message.text.includes(text)
      );
      assert.equal(users.length, 1, "one user message");
      const audit = await (await daemon.api("/api/audit?limit=1000")).json() as AuditRow[];
      const sends = audit.filter((e) => e.action === "hook.prompt" && e.detail.promptId === promptId);
      assert.ok(sends.length >= 2, `sent again after the refusal (${sends.length} sends)`);
      assert.equal(audit.filter((e) => e.action === "hook.prompt.failed").length, 0);
    } finally {
      await Deno.writeTextFile(release, "").catch(() => {});
      await pi.stop();
      await daemon.stop();
      await llm.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  });
}
