/**
 * The container bridge (docker/bridge/index.mjs) run as a host process, on pi 0.73.1 (Node 20, the SDK in
 * docker/bridge/node_modules) and pi 1.6.0 (Node 22): it registers the daemon-chosen session with
 * agent: true and the repo, answers a REST prompt, exits 0 on SIGTERM after bye, and continues the same
 * session (and seq) when started again.
 */
import assert from "node:assert/strict";
import { startDaemon, waitFor } from "../../testing/daemon.ts";
import { startFakeLlm } from "../../testing/fixtures/fake_llm.mjs";
import { signalChild } from "../../testing/proc.ts";
import {
  allEvents,
  assertInstalled,
  BRIDGE,
  makePiHome,
  modelsJson,
  PI_VERSIONS,
  type PiVersion,
  sessions,
} from "../../testing/pi.ts";

type Ev = Record<string, unknown> & { seq: number; type: string };

function startBridge(v: PiVersion, env: Record<string, string>) {
  const child = new Deno.Command(v.node, {
    args: [BRIDGE],
    env: {
      ...env,
      // 0.73.1 comes from the bridge's own node_modules, as in the worker image; 1.6.0 from .tools.
      ...(v.name === "0.73.1" ? {} : { LVMH_PI_MODULE: v.sdk }),
    },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let log = "";
  const pumps = [child.stdout, child.stderr].map(async (s) => {
    for await (const c of s.pipeThrough(new TextDecoderStream())) log += c;
  });
  const status = child.status.then(async (s) => {
    await Promise.all(pumps);
    return s;
  });
  return {
    log: () => log,
    status,
    kill: (sig: Deno.Signal) => signalChild(child, sig),
  };
}

for (const v of PI_VERSIONS) {
  Deno.test(`bridge on pi ${v.name}: headless session registered with agent:true, answers, stops cleanly`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using home = await makePiHome(llm.url);
    await using d = await startDaemon();
    const models = `${home.dir}/models.json`;
    await Deno.writeTextFile(models, modelsJson(llm.url));
    const sessionDir = `${home.dir}/pi-sessions`;
    const id = `bridge-${v.name.replaceAll(".", "")}-0001`;
    const env = home.env(d, {
      LVMH_SESSION_ID: id,
      LVMH_AGENT: "1",
      LVMH_REPO: "group/project",
      LVMH_MODELS_JSON: models,
      LVMH_WORKSPACE: home.workspace,
      LVMH_SESSION_DIR: sessionDir,
    });
    // Not in the agent dir: the bridge must copy the mounted file there itself.
    await Deno.remove(`${home.agentDir}/models.json`);
    await Deno.remove(`${home.agentDir}/settings.json`);
    let bridge = startBridge(v, env);
    try {
      const s = await waitFor(
        async () => (await sessions(d)).find((s) => s.id === id && s.online),
        `bridge online (bridge log: ${bridge.log()})`,
        30_000,
      );
      assert.equal(s.agent, true);
      assert.equal(s.repo, "group/project");
      assert.equal(s.cwd, home.workspace);
      assert.equal(s.model, "fake-model");

      const ask = async (message: string) => {
        const res = await d.api(`/api/sessions/${id}/prompt`, {
          method: "POST",
          body: JSON.stringify({ message }),
        });
        assert.equal(res.status, 200);
        await res.body?.cancel();
      };
      await ask("TEXTONLY hello bridge");
      await waitFor(async () => {
        const evs = await allEvents(d, id) as Ev[];
        return evs.some((e) =>
          e.type === "message_end" &&
          (e.message as { text: string }).text === "You said: TEXTONLY hello bridge"
        );
      }, "the answer");
      await waitFor(
        async () => (await allEvents(d, id) as Ev[]).some((e) => e.type === "agent_settled"),
        "settled",
      );

      bridge.kill("SIGTERM");
      const st = await bridge.status;
      assert.equal(st.code, 0, bridge.log());
      const evs = await allEvents(d, id) as Ev[];
      assert.equal(evs.at(-1)?.type, "bye");
      const lastSeq = evs.at(-1)!.seq;
      const files = [...Deno.readDirSync(sessionDir)].map((e) => e.name).filter((n) =>
        n.endsWith(`_${id}.jsonl`)
      );
      assert.equal(files.length, 1, "pi kept the session under the daemon's id");

      // A new bridge for the same session id continues it: same session, seq carries on, history kept.
      bridge = startBridge(v, env);
      await waitFor(
        async () => (await sessions(d)).find((s) => s.id === id && s.online),
        "online again",
        30_000,
      );
      await ask("TEXTONLY again");
      const more = await waitFor(async () => {
        const all = await allEvents(d, id) as Ev[];
        return all.some((e) => e.type === "agent_settled" && e.seq > lastSeq) ? all : null;
      }, "second answer");
      assert.equal(more.find((e) => e.seq > lastSeq)?.seq, lastSeq + 1);
      const llmSaw = llm.requests.at(-1) as { messages: { content: unknown }[] };
      assert.ok(
        JSON.stringify(llmSaw.messages).includes("TEXTONLY hello bridge"),
        "the earlier turn is in context",
      );
      bridge.kill("SIGTERM");
      assert.equal((await bridge.status).code, 0);
    } finally {
      bridge.kill("SIGKILL");
      await bridge.status;
      await llm.close();
    }
  });
}
