/**
 * A kept hook prompt is not lost when the daemon is SIGKILLed after its frame left (issue 11's follow-up). The
 * daemon is the real `main.ts` in its own process; this test plays the plugin. A plugin that lists feature
 * `prompt_once` in `hello` gets the prompt again after the restart and on every new socket until it answers
 * with `command_result`; after the answer it is never sent again. A plugin without the feature keeps today's
 * behaviour: the row goes as the frame is sent, and a restart sends nothing.
 */
import assert from "node:assert/strict";
import { freePort, startDaemon, waitFor } from "../testing/daemon.ts";
import { type AgentClient, connectAgent } from "../testing/agent.ts";
import { keepPrompt, keptIds } from "../testing/kept_prompt.ts";
import { Feature } from "../lib/wire.ts";

Deno.test("hooks: a kept prompt goes again after SIGKILL and reconnects until the plugin answers it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-hooks-prompt-kill-" });
  const port = freePort();
  const start = () => startDaemon({ dataDir: dir, port });
  const agents: AgentClient[] = [];
  const connect = async (sessionId: string, features?: string[]) => {
    const a = await connectAgent(daemon, { sessionId, hello: features ? { features } : {} });
    agents.push(a);
    return a;
  };
  const promptsOf = (a: AgentClient, id: string) =>
    a.frames.filter((f) => f.type === "prompt" && f.promptId === id);
  let daemon = await start();
  try {
    // Both sessions known to the daemon, then a prompt kept for each (the daemon stopped meanwhile).
    for (const s of ["s-new", "s-old"]) await (await connect(s, [Feature.promptOnce])).close();
    await daemon.stop();
    const fresh = keepPrompt(dir, "s-new", "kept for a plugin that answers");
    const old = keepPrompt(dir, "s-old", "kept for an older plugin");
    daemon = await start();

    const a1 = await connect("s-new", [Feature.promptOnce]);
    const p1 = await a1.waitFrame((f) => f.type === "prompt" && f.promptId === fresh, "the kept prompt");
    assert.equal(p1.commandId, fresh);
    assert.equal(p1.message, "kept for a plugin that answers");
    const b1 = await connect("s-old");
    await b1.waitFrame((f) => f.type === "prompt" && f.promptId === old, "the older plugin's prompt");
    await waitFor(() => !keptIds(dir).includes(old), "the older plugin's row goes as it is sent");
    assert.deepEqual(keptIds(dir), [fresh], "unanswered: still kept");

    // The frame left, nothing answered it (as if it never arrived): SIGKILL, restart, the plugin is back.
    assert.equal((await daemon.kill("SIGKILL")).signal, "SIGKILL");
    await daemon.stop();
    daemon = await start();
    const a2 = await connect("s-new", [Feature.promptOnce]);
    await a2.waitFrame((f) => f.type === "prompt" && f.promptId === fresh, "the prompt after the restart");
    const b2 = await connect("s-old");

    // A new socket of the same daemon before an answer: sent again on its hello.
    const a3 = await connect("s-new", [Feature.promptOnce]);
    await a3.waitFrame((f) => f.type === "prompt" && f.promptId === fresh, "the prompt on the new socket");
    a3.send("command_result", { commandId: fresh, ok: true });
    await waitFor(() => keptIds(dir).length === 0, "the answered prompt is no longer kept");
    assert.equal(promptsOf(a3, fresh).length, 1);

    // Answered: neither a restart nor a reconnect sends it again; the older plugin never got its prompt twice.
    await daemon.stop();
    daemon = await start();
    const a4 = await connect("s-new", [Feature.promptOnce]);
    const b3 = await connect("s-old");
    const marker = await daemon.api("/api/sessions/s-new/prompt", {
      method: "POST",
      body: JSON.stringify({ message: "a person's prompt" }),
    });
    assert.equal(marker.status, 200, await marker.clone().text());
    await marker.body?.cancel();
    const next = await a4.waitFrame((f) => f.type === "prompt", "the next prompt");
    assert.equal(next.message, "a person's prompt", "the answered hook prompt was not sent again");
    assert.equal(
      promptsOf(b2, old).length + promptsOf(b3, old).length,
      0,
      "the older plugin's prompt went once",
    );
    const audit = await (await daemon.api("/api/audit?limit=1000")).json() as {
      action: string;
      detail: unknown;
    }[];
    const sends = audit.filter((e) => e.action === "hook.prompt");
    assert.equal(sends.length, 4, "sent three times to the answering plugin, once to the older one");
  } finally {
    for (const a of agents) await a.close().catch(() => {});
    await daemon.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
