/**
 * A throwaway pi HOME (testing/pi.ts `makePiHome`) is gone for good once removed, even when the pi using it
 * outlives what the test stopped: `script` (the pty wrapper of the TUI tests) dies at once on SIGKILL, the
 * pi under it gets SIGHUP and its plugin writes the seq file a moment later. Removed at once, the HOME came
 * back as `/tmp/lvmh-pi-*` holding only `home/.pi/lvmh-agent/seq/<id>`; `remove()` now waits for that pi.
 */
import assert from "node:assert/strict";
import { startDaemon, waitFor } from "../../testing/daemon.ts";
import { startFakeLlm } from "../../testing/fixtures/fake_llm.mjs";
import { pidsUsing } from "../../testing/home_procs.ts";
import { assertInstalled, makePiHome, PI_VERSIONS, piTui, sessions } from "../../testing/pi.ts";

const exists = (path: string) => Deno.stat(path).then(() => true, () => false);
const alive = (pid: number) => exists(`/proc/${pid}/cwd`);

for (const v of PI_VERSIONS) {
  Deno.test(`pi ${v.name} HOME: removed while the TUI pi is still exiting, it stays removed`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using d = await startDaemon();
    const home = await makePiHome(llm.url);
    let pids: number[] = [];
    try {
      const child = piTui(v, home, d, "null");
      await waitFor(async () => (await sessions(d)).find((s) => s.online), "TUI session online", 30_000);
      pids = await pidsUsing(home.dir, home.home);
      assert.ok(pids.length >= 2, `script and pi use the HOME: ${pids}`);
      // As the TUI tests end: the wrapper dies, the pi under it is still shutting down.
      child.kill("SIGKILL");
      await child.status;
      await child.stdin.close().catch(() => {});
      await home.remove();
      assert.equal(await exists(home.dir), false, "removed");
      await waitFor(async () => (await Promise.all(pids.map(alive))).every((a) => !a), "pi exited", 15_000);
      // pi wrote nothing after its HOME went.
      assert.equal(await exists(home.dir), false, "no seq file written into a recreated HOME");
    } finally {
      for (const pid of pids) {
        try {
          Deno.kill(pid, "SIGKILL");
        } catch { /* gone */ }
      }
      await Deno.remove(home.dir, { recursive: true }).catch(() => {});
      await llm.close();
    }
  });
}
