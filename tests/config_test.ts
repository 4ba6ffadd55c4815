import assert from "node:assert/strict";
import { runMainOnce, startDaemon } from "../testing/daemon.ts";

Deno.test("config: an invalid variable stops start-up with exit 2 and one line naming it", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-config-" });
  try {
    const cases: [Record<string, string>, RegExp][] = [
      [{ LVMH_PORT: "http" }, /^lvmh: invalid configuration: LVMH_PORT: .*"http"/],
      [{ LVMH_PORT: "70000" }, /LVMH_PORT/],
      [{ LVMH_HOST: "a b" }, /LVMH_HOST/],
      [{ LVMH_TOKEN: "short" }, /LVMH_TOKEN: must be at least 16/],
      [{ LVMH_GITLAB_URL: "ftp://x" }, /LVMH_GITLAB_URL/],
      [{ LVMH_CONTAINER_DOCKER_SOCK: "relative.sock" }, /LVMH_CONTAINER_DOCKER_SOCK/],
      [{ LVMH_WORKER_MEMORY: "lots" }, /LVMH_WORKER_MEMORY: must be a size/],
      [{ LVMH_WORKER_CPUS: "-1" }, /LVMH_WORKER_CPUS/],
      [{ LVMH_RETENTION_DAYS: "0" }, /LVMH_RETENTION_DAYS: must be a whole number of days/],
      [{ LVMH_STALL_MINUTES: "soon" }, /LVMH_STALL_MINUTES: .*"soon"/],
      [{ LVMH_STALL_MINUTES: "0" }, /LVMH_STALL_MINUTES: must be a positive number of minutes/],
      [{ LVMH_GITLAB_HOOK_SECRET: "too-short" }, /LVMH_GITLAB_HOOK_SECRET: must be at least 16/],
    ];
    for (const [env, line] of cases) {
      await t.step(Object.keys(env)[0], async () => {
        const { code, stderr } = await runMainOnce({ LVMH_DATA_DIR: dir, ...env });
        assert.equal(code, 2);
        assert.match(stderr.trim(), line);
        assert.equal(stderr.trim().split("\n").length, 1);
        for (const secret of [env.LVMH_TOKEN, env.LVMH_GITLAB_HOOK_SECRET]) {
          if (secret) assert.ok(!stderr.includes(secret), "a secret is not echoed");
        }
      });
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("config: without LVMH_TOKEN a token is generated once, kept and printed once", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-config-" });
  try {
    const env = { LVMH_TOKEN: "" };
    // An empty LVMH_TOKEN counts as unset for the helper; pass the env without it.
    const first = await startDaemon({ dataDir: dir, token: "unused-0000000000000000", env });
    await first.stop();
    assert.match(first.output(), /generated an access token/);
    const token = (await Deno.readTextFile(`${dir}/token`)).trim();
    assert.ok(token.length >= 32);
    assert.equal((await Deno.stat(`${dir}/token`)).mode! & 0o777, 0o600);
    assert.ok(first.output().includes(token));
    const second = await startDaemon({ dataDir: dir, token, env });
    const res = await second.api("/api/sessions");
    assert.equal(res.status, 200);
    await res.body?.cancel();
    await second.stop();
    assert.ok(!second.output().includes(token), "printed only on the start that created it");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
