/**
 * The `lvmh` CLI against a real daemon and the real pi (0.73.1 and 1.6.0) with the plugin: list the session,
 * prompt it, answer the bash call it asks about (`LVMH_ASK=bash`), and read the conversation back with `tail`.
 */
import assert from "node:assert/strict";
import { startDaemon, waitFor } from "./_daemon.ts";
import { startFakeLlm } from "./fixtures/fake_llm.mjs";
import { assertInstalled, makePiHome, PI_VERSIONS, piRpc, sessions } from "./_pi.ts";
import { cliEnv, lvmh } from "./_cli.ts";

const lines = (text: string) => text.split("\n").filter(Boolean).map((l) => JSON.parse(l));

for (const v of PI_VERSIONS) {
  Deno.test(`cli on pi ${v.name}: sessions, prompt, approvals, approve and tail`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using home = await makePiHome(llm.url);
    await using d = await startDaemon({ env: { LVMH_ASK: "bash" } });
    await using _pi = piRpc(v, home, home.env(d));
    const configDir = await Deno.makeTempDir({ prefix: "lvmh-cli-pi-" });
    try {
      const env = cliEnv(configDir, d);
      const id = (await waitFor(async () => (await sessions(d)).find((s) => s.online), "pi online"))
        .id as string;

      const listed = await lvmh(env, ["sessions", "--online", "--json"]);
      assert.equal(listed.code, 0, listed.stderr);
      assert.deepEqual(lines(listed.stdout).map((s) => s.id), [id]);

      const said = await lvmh(env, ["prompt", id, "TEXTONLY from the terminal"]);
      assert.equal(said.code, 0, said.stderr);
      await waitFor(async () => {
        const out = await lvmh(env, ["tail", id]);
        return out.stdout.includes("You said: TEXTONLY from the terminal") || null;
      }, "the answer in tail");

      // Anything else makes the fake LLM call bash, which this session asks about.
      assert.equal((await lvmh(env, ["prompt", id, "run something", "--follow-up"])).code, 0);
      const [waiting] = await waitFor(async () => {
        const found = lines((await lvmh(env, ["approvals", "--json"])).stdout);
        return found.length ? found : null;
      }, "the bash call waiting");
      assert.equal(waiting.toolName, "bash");
      const approved = await lvmh(env, ["approve", waiting.id, "--reason", "from the terminal"]);
      assert.equal(approved.code, 0, approved.stderr);
      const events = await waitFor(async () => {
        const evs = lines((await lvmh(env, ["tail", id, "--json"])).stdout);
        return evs.some((e) => e.type === "message_end" && e.message?.text?.includes("The command printed"))
          ? evs
          : null;
      }, "the tool ran and was answered");
      assert.equal(events.filter((e) => e.type === "tool_execution_end" && e.toolName === "bash").length, 1);
      const resolved = events.find((e) => e.type === "approval_resolved");
      assert.equal(resolved?.decision, "approve");
      assert.equal(resolved?.source, "web");
      const seqs = events.map((e) => e.seq);
      assert.deepEqual(
        seqs,
        [...new Set(seqs)].sort((a, b) => a - b),
        "tail shows each event once, in order",
      );
    } finally {
      await llm.close();
      await Deno.remove(configDir, { recursive: true });
    }
  });
}
