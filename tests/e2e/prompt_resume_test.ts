/**
 * Idle stop and a prompt to a stopped session, on the real engine with the stub worker: with
 * `LVMH_IDLE_STOP_MINUTES` short, a spawned session left alone has its worker stopped (its storage kept);
 * a web prompt then answers `{resumed: true}`, resumes it, and the prompt reaches the new worker once.
 */
import assert from "node:assert/strict";
import { waitFor } from "../../testing/daemon.ts";
import { dockerTest } from "../../testing/docker.ts";
import { post, startSpawnEnv } from "../../testing/spawn_env.ts";

type Session = { id: string; online: boolean; container: string | null };
type Event = { type: string; message?: { role: string; text?: string } };

dockerTest("idle stop, then a web prompt: resumed and delivered once", async () => {
  // 0.03 minutes: stopped after about 2 s of quiet (checked every second).
  const env = await startSpawnEnv({ env: { LVMH_IDLE_STOP_MINUTES: "0.03" } });
  const { d, engine } = env;
  try {
    await post(d, "/api/gitlab/connect", { token: env.pat }).then((r) => r.body?.cancel());
    const spawned = await (await post(d, "/api/spawn", { repo: env.repos[0], ask: [] })).json();
    const id = spawned.sessionId as string;
    const session = async () =>
      ((await (await d.api("/api/sessions")).json()) as Session[]).find((s) => s.id === id)!;
    await waitFor(async () => (await session())?.online, "the hello", 60_000);
    const stopped = await waitFor(
      async () => {
        const s = await session();
        return s.container === "stopped" && !s.online ? s : null;
      },
      "the idle stop",
      30_000,
    );
    assert.equal(stopped.container, "stopped");
    assert.deepEqual(await engine.containerList({ "lvmh.session": id, "lvmh.kind": "worker" }), []);

    const res = await post(d, `/api/sessions/${id}/prompt`, { message: "wake up" });
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(body.resumed, true);
    const echoes = await waitFor(
      async () => {
        const events = (await (await d.api(`/api/sessions/${id}/events`)).json()) as Event[];
        const got = events.filter((e) => e.message?.text === "echo: wake up");
        return got.length ? events : null;
      },
      "the prompt delivered",
      30_000,
    );
    assert.equal(echoes.filter((e) => e.message?.role === "user" && e.message.text === "wake up").length, 1);
    // Still once after another round trip (the kept prompt is not sent again). The second prompt may find
    // the worker idle-stopped again: then it resumes it too.
    const second = await post(d, `/api/sessions/${id}/prompt`, { message: "and again" });
    assert.equal(second.status, 200, await second.text());
    const later = await waitFor(
      async () => {
        const events = (await (await d.api(`/api/sessions/${id}/events`)).json()) as Event[];
        return events.some((e) => e.message?.text === "echo: and again") ? events : null;
      },
      "the second prompt delivered",
      30_000,
    );
    assert.equal(later.filter((e) => e.message?.text === "echo: wake up").length, 1);
  } finally {
    await env.close();
  }
});
