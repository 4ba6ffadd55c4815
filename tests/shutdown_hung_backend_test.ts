/**
 * A daemon whose spawn backend takes the connection and never answers (a hung Docker engine, a Kubernetes API
 * server behind a proxy that died) still stops at once on SIGTERM: its start's recovery of workers, which a
 * stop waits for, is cut instead of waited out (before: 180 s on Docker, six calls of 30 s; for ever on
 * Kubernetes, whose calls had no bound).
 */
import assert from "node:assert/strict";
import { startDaemon, waitFor } from "../testing/daemon.ts";
import { listenSilent, type SilentServer } from "../testing/silent_server.ts";

/** Far below the 30 s of one engine or API server call that is waited out. */
const GRACE_MS = 10_000;

/** SIGTERM, then how the daemon ended: by itself, or by the SIGKILL sent if it is still up after GRACE_MS. */
async function stopOnTerm(env: Record<string, string>, hung: SilentServer) {
  await using daemon = await startDaemon({ env });
  await waitFor(() => hung.accepted() > 0, "the daemon's first call to its backend");
  const fallback = setTimeout(() => daemon.kill("SIGKILL"), GRACE_MS);
  try {
    return { status: await daemon.kill("SIGTERM"), output: daemon.output() };
  } finally {
    clearTimeout(fallback);
  }
}

Deno.test("SIGTERM stops a daemon whose Docker engine never answers", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-hung-engine-" });
  try {
    await using hung = listenSilent({ transport: "unix", path: `${dir}/docker.sock` });
    const { status, output } = await stopOnTerm({ LVMH_CONTAINER_DOCKER_SOCK: `${dir}/docker.sock` }, hung);
    assert.equal(status.signal, null, `the daemon had to be killed:\n${output}`);
    assert.equal(status.code, 0, output);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("SIGTERM stops a daemon whose Kubernetes API server never answers", async () => {
  await using hung = listenSilent({ port: 0 });
  const { port } = hung.addr as Deno.NetAddr;
  const env = { LVMH_SPAWN_BACKEND: "kubernetes", LVMH_KUBE_URL: `http://127.0.0.1:${port}` };
  const { status, output } = await stopOnTerm(env, hung);
  assert.equal(status.signal, null, `the daemon had to be killed:\n${output}`);
  assert.equal(status.code, 0, output);
});
