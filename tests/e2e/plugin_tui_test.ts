/**
 * The plugin inside pi's interactive TUI (0.73.1 and 1.6.0, under a pty from `script`): a prompt sent from the
 * web is delivered into the terminal session and its answer shows on the screen; SIGTERM takes the session
 * offline (1.6.0 runs session_shutdown and says bye; 0.73.1 exits before it, so the closed socket does it).
 */
import assert from "node:assert/strict";
import { startDaemon, waitFor } from "../../testing/daemon.ts";
import { startFakeLlm } from "../../testing/fixtures/fake_llm.mjs";
import { signalChild } from "../../testing/proc.ts";
import { allEvents, assertInstalled, makePiHome, PI_VERSIONS, piTui, sessions } from "../../testing/pi.ts";

type Ev = Record<string, unknown> & { seq: number; type: string };

for (const v of PI_VERSIONS) {
  Deno.test(`plugin in the pi ${v.name} TUI: a web prompt is answered on the terminal`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using home = await makePiHome(llm.url);
    await using d = await startDaemon();
    const child = piTui(v, home, d);
    let screen = "";
    const pump = (async () => {
      for await (const c of child.stdout.pipeThrough(new TextDecoderStream())) screen += c;
    })();
    try {
      const s = await waitFor(
        async () => (await sessions(d)).find((s) => s.online),
        "TUI session online",
        30_000,
      );
      const res = await d.api(`/api/sessions/${s.id}/prompt`, {
        method: "POST",
        body: JSON.stringify({ message: "TEXTONLY from the web to the terminal" }),
      });
      assert.equal(res.status, 200);
      await res.body?.cancel();
      await waitFor(
        async () => {
          const evs = await allEvents(d, s.id as string) as Ev[];
          return evs.some((e) => e.type === "agent_settled");
        },
        "the run settles",
        30_000,
      );
      await waitFor(
        () => screen.includes("You said: TEXTONLY from the web to the terminal"),
        "answer on screen",
      );
      child.kill("SIGTERM");
      await child.status;
      await waitFor(async () => (await sessions(d)).find((x) => x.id === s.id && !x.online), "offline");
      if (v.name !== "0.73.1") {
        assert.equal((await allEvents(d, s.id as string) as Ev[]).at(-1)?.type, "bye");
      }
    } finally {
      signalChild(child, "SIGKILL");
      await child.status;
      await child.stdin.close().catch(() => {});
      await pump;
      await llm.close();
    }
  });
}
