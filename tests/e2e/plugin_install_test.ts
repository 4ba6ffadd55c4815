/**
 * The installation ways plugin/README.md gives work with the real pi 0.73.1 and 1.6.0, with nothing installed
 * beside the plugin file (its `ws` is bundled in; pi 0.73.1 runs on Node 20, which has no WebSocket):
 * `pi install <path>`, one file copied into ~/.pi/agent/extensions/, and an entry in settings.json.
 */
import assert from "node:assert/strict";
import { startDaemon, waitFor } from "../../testing/daemon.ts";
import { startFakeLlm } from "../../testing/fixtures/fake_llm.mjs";
import {
  assertInstalled,
  makePiHome,
  PI_VERSIONS,
  type PiHome,
  piPrint,
  PLUGIN,
  ROOT,
  sessions,
} from "../../testing/pi.ts";

for (const v of PI_VERSIONS) {
  Deno.test(`plugin on pi ${v.name}: installed as README.md says, it loads in every session`, async (t) => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using d = await startDaemon();
    /** A pi run without -e in `home` shows up in the daemon: the installed plugin loaded. */
    const loads = async (home: PiHome, what: string) => {
      const run = await piPrint(v, home, home.env(d), `TEXTONLY ${what}`, [], false);
      assert.equal(run.code, 0, run.stderr);
      await waitFor(
        async () => (await sessions(d)).some((s) => s.cwd === home.workspace),
        `session (${what})`,
      );
    };
    try {
      await t.step("pi install <the plugin folder>", async () => {
        await using home = await makePiHome(llm.url);
        const out = await new Deno.Command(v.node, {
          args: [v.cli, "install", `${ROOT}plugin`],
          cwd: home.workspace,
          env: home.env(),
          clearEnv: true,
          stdin: "null",
          signal: AbortSignal.timeout(60_000),
        }).output();
        assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
        await loads(home, "pi install");
      });
      await t.step("the one file copied into ~/.pi/agent/extensions/", async () => {
        await using home = await makePiHome(llm.url);
        await Deno.mkdir(`${home.agentDir}/extensions`, { recursive: true });
        // pi picks up top-level .ts/.js files there (not .mjs); the bundle is plain ESM, so .js loads it.
        await Deno.copyFile(PLUGIN, `${home.agentDir}/extensions/lvmh-agent.js`);
        await loads(home, "copied");
      });
      await t.step("an absolute path in settings.json", async () => {
        await using home = await makePiHome(llm.url);
        const settings = JSON.parse(await Deno.readTextFile(`${home.agentDir}/settings.json`));
        await Deno.writeTextFile(
          `${home.agentDir}/settings.json`,
          JSON.stringify({ ...settings, extensions: [PLUGIN] }),
        );
        await loads(home, "settings");
      });
    } finally {
      await llm.close();
    }
  });
}
