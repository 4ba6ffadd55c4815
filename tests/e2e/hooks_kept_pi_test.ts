/**
 * A kept hook prompt's ends on the real pi (0.73.1 and 1.6.0, RPC mode) with the plugin:
 *   1. SIGKILL after the prompt's `command_result` was stored but before its row was dropped (held here by a
 *      trigger that fails the daemon's delete, as a kill between the two writes would leave it): the restarted
 *      daemon finds the answer in the event log, drops the row and never sends the prompt again.
 *   2. pi's `/reload` while the prompt arrives: the plugin refuses it ("no live pi session"); the daemon tries
 *      again with backoff, and pi gets it after the reload, exactly once. A second extension's command runs
 *      `ctx.reload()` and holds pi inside the reload (its `session_shutdown` waits for a file), so the prompt
 *      surely lands in that window.
 *   3. pi's `/reload` while the prompt waits in the plugin's own queue for pi (pi busy, the plugin not in a run
 *      of its own): the plugin refuses it as it drops it ("pi is reloading"), the socket staying open; the
 *      daemon's next try reaches pi after the reload, exactly once. Another extension holds pi there.
 * Exactly once is read from pi itself (the user messages of the conversation it sends the LLM), from the
 * stored events, and from the audit log's sends.
 */
import assert from "node:assert/strict";
import { freePort, startDaemon, waitFor } from "../../testing/daemon.ts";
import { startFakeLlm } from "../../testing/fixtures/fake_llm.mjs";
import { allEvents, assertInstalled, makePiHome, PI_VERSIONS, piRpc, sessions } from "../../testing/pi.ts";
import { holdKeptRows, keepPrompt, keptIds, lastUserTexts } from "../../testing/kept_prompt.ts";

type Ev = { type: string; seq: number; commandId?: string; ok?: boolean; error?: string; message?: Msg };
type Msg = { role: string; text: string };
type AuditRow = { action: string; detail: { promptId?: string } };

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

/**
 * A pi extension that holds pi where the plugin queues a prompt instead of handing it to pi, each hold until
 * the file HOLD_PI_RELEASE exists: while HOLD_PI_END exists a run's `agent_end` (the plugin saw the run end,
 * pi is not idle yet; for pi 1.6.0), while HOLD_PI_TOOL exists a tool call (pi runs, and a plugin reloaded
 * in the middle never saw the run start; for pi 0.73.1, which reloads mid-run). `/reload-now` reloads pi;
 * `/idle-reload` writes HOLD_PI_WAITING, then reloads pi as soon as it is idle, in the same turn (before the
 * plugin's next look at pi, which would hand the prompt over and start a run).
 */
const HOLD_PI = `
import { existsSync, writeFileSync } from "node:fs";
const env = (name) => process.env["HOLD_PI_" + name];
const hold = async (armed) => {
  if (!existsSync(armed) || existsSync(env("RELEASE"))) return;
  writeFileSync(env("HELD"), "");
  const until = Date.now() + 60000;
  while (!existsSync(env("RELEASE")) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
};
export default function (pi) {
  pi.registerCommand("reload-now", { description: "reload", handler: (_args, ctx) => ctx.reload() });
  pi.registerCommand("idle-reload", {
    description: "reload once idle",
    handler: async (_args, ctx) => {
      writeFileSync(env("WAITING"), "");
      await ctx.waitForIdle();
      await ctx.reload();
    },
  });
  pi.on("agent_end", () => hold(env("END")));
  pi.on("tool_call", () => hold(env("TOOL")));
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
      const texts = lastUserTexts(llm.requests);
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
      const texts = lastUserTexts(llm.requests);
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

  Deno.test(`hooks on pi ${v.name}: a kept prompt queued in the plugin at /reload arrives after it, once`, async () => {
    assertInstalled(v);
    // pi 0.73.1 reloads in the middle of a run, 1.6.0 only once idle: each is held where it can reload next.
    const midRun = v.name === "0.73.1";
    const llm = await startFakeLlm();
    const dir = await Deno.makeTempDir({ prefix: "lvmh-hooks-queued-reload-pi-" });
    const port = freePort();
    const start = () => startDaemon({ dataDir: dir, port });
    await using home = await makePiHome(llm.url);
    const file = (name: string) => `${home.dir}/${name}`;
    const ext = file("hold_pi.mjs");
    await Deno.writeTextFile(ext, HOLD_PI);
    const exists = (path: string) => Deno.stat(path).then(() => true, () => false);
    let daemon = await start();
    const env = home.env({ agentUrl: daemon.agentUrl, token: daemon.token }, {
      HOLD_PI_END: file("hold-end"),
      HOLD_PI_TOOL: file("hold-tool"),
      HOLD_PI_HELD: file("held"),
      HOLD_PI_RELEASE: file("release"),
      HOLD_PI_WAITING: file("waiting"),
    });
    await using pi = piRpc(v, home, env, ["-e", ext]);
    try {
      const online = () => sessions(daemon).then((l) => l.find((s) => s.online));
      const id = (await waitFor(online, "pi online", 20_000)).id as string;
      const text = "TEXTONLY kept prompt queued in the plugin across a reload";
      if (midRun) {
        // A run held in its tool call, and a reload in the middle of it: the plugin's new run never saw that
        // run start, so it queues prompts until pi is idle.
        await Deno.writeTextFile(file("hold-tool"), "");
        await pi.command({ type: "prompt", message: "run a tool first" });
        await waitFor(() => exists(file("held")), "pi held in a tool call", 20_000);
        assert.equal((await pi.command({ type: "prompt", message: "/reload-now" })).success, true);
      } else {
        // A run held at its end: the plugin saw agent_end, and pi is not idle yet.
        await Deno.writeTextFile(file("hold-end"), "");
        await pi.command({ type: "prompt", message: "TEXTONLY the run before" });
        await waitFor(() => exists(file("held")), "pi held at the run's end", 20_000);
      }
      await daemon.stop();
      const promptId = keepPrompt(dir, id, text);
      daemon = await start();
      const events = () => allEvents(daemon, id) as Promise<Ev[]>;
      const audit = async () => await (await daemon.api("/api/audit?limit=1000")).json() as AuditRow[];
      await waitFor(
        async () => (await audit()).some((e) => e.action === "hook.prompt" && e.detail.promptId === promptId),
        "the kept prompt sent",
        30_000,
      );
      // A command sent after it and answered: the plugin has read the prompt's frame (one socket, in order).
      const rename = await daemon.api(`/api/sessions/${id}/name`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "queued-reload" }),
      });
      const { commandId } = await rename.json() as { commandId: string };
      await waitFor(
        async () => (await events()).some((e) => e.type === "command_result" && e.commandId === commandId),
        "the rename answered",
      );
      assert.ok(
        !(await events()).some((e) => e.type === "command_result" && e.commandId === promptId),
        "the prompt waits in the plugin, unanswered",
      );

      // A /reload while the prompt waits (on 1.6.0 as soon as the run is over): the plugin drops the prompt pi
      // never got, and says so.
      let reloaded;
      if (midRun) {
        reloaded = await pi.command({ type: "prompt", message: "/reload-now" });
      } else {
        const reloading = pi.command({ type: "prompt", message: "/idle-reload" });
        await waitFor(() => exists(file("waiting")), "the reload waits for idle", 20_000);
        await Deno.writeTextFile(file("release"), "");
        reloaded = await reloading;
      }
      assert.equal(reloaded.success, true, JSON.stringify(reloaded));
      const refusal = await waitFor(
        async () =>
          (await events()).find((e) => e.type === "command_result" && e.commandId === promptId && !e.ok),
        "the plugin refused it at the reload",
        30_000,
      );
      assert.match(String(refusal.error), /pi is reloading; prompt not delivered/);
      await Deno.writeTextFile(file("release"), ""); // 0.73.1: the held run goes on, then pi is idle

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
      const texts = lastUserTexts(llm.requests);
      assert.equal(texts.filter((t) => t.includes(text)).length, 1, "pi has it once");
      const users = (await events()).filter((e) =>
        e.type === "message_end" && e.message?.role === "user" && e.message.text.includes(text)
      );
      assert.equal(users.length, 1, "one user message");
      const sends = (await audit()).filter((e) =>
        e.action === "hook.prompt" && e.detail.promptId === promptId
      );
      assert.ok(sends.length >= 2, `sent again after the refusal (${sends.length} sends)`);
      assert.equal((await audit()).filter((e) => e.action === "hook.prompt.failed").length, 0);
    } finally {
      await Deno.writeTextFile(file("release"), "").catch(() => {});
      await pi.stop();
      await daemon.stop();
      await llm.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  });
}
