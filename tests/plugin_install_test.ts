/**
 * The installation ways plugin/README.md gives work with the real pi 0.73.1 and 1.6.0: a folder under
 * ~/.pi/agent/extensions/ found through its package.json "pi" field, and an entry in settings.json.
 */
import assert from "node:assert/strict";
import { startDaemon, waitFor } from "./_daemon.ts";
import { startFakeLlm } from "./fixtures/fake_llm.mjs";
import { assertInstalled, makePiHome, PI_VERSIONS, piPrint, PLUGIN, ROOT, sessions } from "./_pi.ts";

async function copyDir(from: string, to: string) {
  await Deno.mkdir(to, { recursive: true });
  for await (const e of Deno.readDir(from)) {
    if (e.isDirectory) await copyDir(`${from}/${e.name}`, `${to}/${e.name}`);
    else if (e.isFile) await Deno.copyFile(`${from}/${e.name}`, `${to}/${e.name}`);
  }
}

for (const v of PI_VERSIONS) {
  Deno.test(`plugin on pi ${v.name}: installed as README.md says, it loads in every session`, async (t) => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using d = await startDaemon();
    try {
      await t.step("a folder in ~/.pi/agent/extensions with a pi manifest", async () => {
        await using home = await makePiHome(llm.url);
        const dir = `${home.agentDir}/extensions/lvmh-agent`;
        await Deno.mkdir(dir, { recursive: true });
        await Deno.copyFile(PLUGIN, `${dir}/lvmh-agent.mjs`);
        await Deno.copyFile(`${ROOT}plugin/package.json`, `${dir}/package.json`);
        // What `npm install` there produces (copied: tests do not use the network).
        await copyDir(`${ROOT}plugin/node_modules`, `${dir}/node_modules`);
        const run = await piPrint(v, home, home.env(d), "TEXTONLY installed", [], false);
        assert.equal(run.code, 0, run.stderr);
        await waitFor(
          async () => (await sessions(d)).some((s) => s.cwd === home.workspace),
          "session from the folder",
        );
      });
      await t.step("an absolute path in settings.json", async () => {
        await using home = await makePiHome(llm.url);
        const settings = JSON.parse(await Deno.readTextFile(`${home.agentDir}/settings.json`));
        await Deno.writeTextFile(
          `${home.agentDir}/settings.json`,
          JSON.stringify({ ...settings, extensions: [PLUGIN] }),
        );
        const run = await piPrint(v, home, home.env(d), "TEXTONLY from settings", [], false);
        assert.equal(run.code, 0, run.stderr);
        await waitFor(
          async () => (await sessions(d)).some((s) => s.cwd === home.workspace),
          "session from settings",
        );
      });
    } finally {
      await llm.close();
    }
  });
}
