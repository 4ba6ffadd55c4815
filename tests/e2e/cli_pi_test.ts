/**
 * The `lvmh` CLI against a real daemon and the real pi (0.73.1 and 1.6.0) with the plugin: list the session,
 * prompt it, answer the bash call it asks about (`LVMH_ASK=bash`), and read the conversation back with `tail`;
 * then follow it with `tail -f` while pi streams a slow answer, abort that run, and reject a bash call.
 */
import assert from "node:assert/strict";
import { startDaemon, waitFor } from "../../testing/daemon.ts";
import { startFakeLlm } from "../../testing/fixtures/fake_llm.mjs";
import { assertInstalled, makePiHome, PI_VERSIONS, piRpc, sessions } from "../../testing/pi.ts";
import { cliEnv, lvmh, spawnLvmh } from "../../testing/cli.ts";

const lines = (text: string) => text.split("\n").filter(Boolean).map((l) => JSON.parse(l));

for (const v of PI_VERSIONS) {
  Deno.test(`cli on pi ${v.name}: sessions, prompt, approvals, approve, reject, abort, tail and tail -f`, async () => {
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

      // tail -f: pi's streamed text shows as it arrives, before the message ends; abort ends the run.
      await using text = spawnLvmh(env, ["tail", id, "-f"]);
      await using json = spawnLvmh(env, ["tail", id, "-f", "--json"]);
      await json.waitOut((o) => o.includes("The command printed"), "tail -f starts with the latest page");
      assert.equal((await lvmh(env, ["prompt", id, "SLOW answer please"])).code, 0);
      await text.waitOut(
        (o) => /assistant: slow0 slow1 slow2 /.test(o),
        "streamed text as it arrives",
        20_000,
      );
      const streamed = lines(json.stdout());
      assert.ok(
        streamed.some((e) => e.type === "message_update" && e.delta?.includes("slow")),
        "deltas live",
      );
      assert.ok(
        !streamed.some((e) => e.type === "message_end" && e.message?.text?.includes("slow")),
        "shown before the message ends",
      );
      const runs = (o: string) => o.split("-- run ended").length - 1;
      const before = runs(text.stdout());
      const aborted = await lvmh(env, ["abort", id]);
      assert.equal(aborted.code, 0, aborted.stderr);
      await text.waitOut((o) => runs(o) > before, "the aborted run ends", 20_000);
      assert.ok(!text.stdout().includes("slow59"), "aborted before the end of the answer");

      // reject: the bash call does not run; tail -f shows the rejection.
      assert.equal((await lvmh(env, ["prompt", id, "run something else", "--follow-up"])).code, 0);
      const [second] = await waitFor(async () => {
        const found = lines((await lvmh(env, ["approvals", "--json"])).stdout);
        return found.length ? found : null;
      }, "the second bash call waiting");
      await text.waitOut((o) => o.includes(`lvmh approve ${second.id}`), "tail -f shows the waiting call");
      const rejected = await lvmh(env, ["reject", second.id, "--reason", "not from here"]);
      assert.equal(rejected.code, 0, rejected.stderr);
      assert.equal(rejected.stdout.trim(), "rejected");
      await text.waitOut((o) => /rejected by \S+ \(web\)/.test(o), "tail -f shows the rejection");
      const all = await waitFor(
        async () => {
          const evs = lines((await lvmh(env, ["tail", id, "--json"])).stdout);
          const at = evs.findIndex((e) => e.type === "approval_resolved" && e.approvalId === second.id);
          return at >= 0 && evs.slice(at).some((e) => e.type === "agent_end") ? evs : null;
        },
        "the rejected run ends",
        20_000,
      );
      assert.equal(
        all.filter((e) => e.type === "tool_execution_end" && e.toolName === "bash" && !e.isError).length,
        1,
        "only the approved call ran",
      );
      // tail -f showed every persisted event once, in order, as the REST history has them.
      await json.waitOut((o) => o.includes(`"seq":${all.at(-1).seq},`), "tail -f has the last event");
      const followed = lines(json.stdout()).filter((e) => e.type !== "message_update").map((e) => e.seq);
      assert.deepEqual(followed, all.map((e) => e.seq));
    } finally {
      await llm.close();
      await Deno.remove(configDir, { recursive: true });
    }
  });
}
