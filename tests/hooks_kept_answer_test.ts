/**
 * The two ends of a kept hook prompt, with the daemon in this process and this test as the plugin (feature
 * `prompt_once`; the real pi is tests/e2e/hooks_kept_pi_test.ts):
 * - an `ok` answer already in the event log (the daemon died after storing it, before dropping the row): the
 *   row is dropped at start and the prompt is never sent again;
 * - a refusal (`ok: false`, "no live pi session" while pi reloads) is tried again with backoff until taken;
 *   one refused for longer than the bound is dropped and recorded as `hook.prompt.failed` in the audit log.
 */
import assert from "node:assert/strict";
import { type InProcessDaemon, startInProcess } from "../testing/inproc.ts";
import { waitFor } from "../testing/daemon.ts";
import { type AgentClient, connectAgent } from "../testing/agent.ts";
import { keepPrompt, keptIds } from "../testing/kept_prompt.ts";
import { Feature } from "../lib/wire.ts";

type AuditRow = { action: string; sessionId: string | null; detail: Record<string, unknown> };

async function audit(d: InProcessDaemon): Promise<AuditRow[]> {
  return await (await d.api("/api/audit?limit=1000")).json();
}

const sendsOf = (rows: AuditRow[], promptId: string) =>
  rows.filter((r) => r.action === "hook.prompt" && r.detail.promptId === promptId);

/** A plugin socket that answers `prompt_once` prompts. */
const plugin = (d: InProcessDaemon, sessionId: string) =>
  connectAgent(d, { sessionId, hello: { features: [Feature.promptOnce] } });

const promptsOf = (a: AgentClient, id: string) =>
  a.frames.filter((f) => f.type === "prompt" && f.promptId === id);

/** A data dir where `sessionId` is known, and a prompt kept for it (the daemon stopped meanwhile). */
async function keptFor(
  sessionId: string,
  before?: (a: AgentClient, id: string, d: InProcessDaemon) => Promise<void>,
) {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-hooks-kept-" });
  const d = await startInProcess({ dataDir: dir });
  const id = crypto.randomUUID();
  try {
    const a = await plugin(d, sessionId);
    await before?.(a, id, d);
    await a.close();
  } finally {
    await d.stop();
  }
  keepPrompt(dir, sessionId, `kept for ${sessionId}`, id);
  return { dir, id };
}

Deno.test("hooks: a kept prompt whose ok answer was stored before a kill is dropped at start", async () => {
  // The plugin took the prompt and its answer was stored; the row (written after the stop here) stands for
  // the one a kill before the daemon dropped it leaves. (The kill itself: tests/e2e/hooks_kept_pi_test.ts.)
  const { dir, id } = await keptFor("k-answered", async (a, id, d) => {
    const seq = a.send("command_result", { commandId: id, ok: true });
    await waitFor(async () => {
      const res = await d.api(`/api/sessions/k-answered/events?after=${seq - 1}`);
      return ((await res.json()) as unknown[]).length > 0;
    }, "the answer stored");
  });
  const d = await startInProcess({ dataDir: dir });
  try {
    // At start, with no plugin connected yet.
    await waitFor(() => keptIds(dir).length === 0, "the answered prompt is dropped at start");
    const a = await plugin(d, "k-answered");
    const res = await d.api("/api/sessions/k-answered/prompt", {
      method: "POST",
      body: JSON.stringify({ message: "a person's prompt" }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    const next = await a.waitFrame((f) => f.type === "prompt", "the next prompt");
    assert.equal(next.message, "a person's prompt", "the answered hook prompt was not sent again");
    assert.equal(sendsOf(await audit(d), id).length, 0);
    await a.close();
  } finally {
    await d.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

Deno.test("hooks: a refused kept prompt goes again with backoff until the plugin takes it", async () => {
  const { dir, id } = await keptFor("k-refused");
  const d = await startInProcess({ dataDir: dir });
  d.daemon.app.hooks.kept.retry = { firstMs: 50, maxMs: 100, forMs: 10_000 };
  try {
    const a = await plugin(d, "k-refused");
    await a.waitFrame((f) => f.type === "prompt" && f.promptId === id, "the kept prompt");
    a.send("command_result", { commandId: id, ok: false, error: "no live pi session" });
    await waitFor(() => promptsOf(a, id).length === 2, "sent again after the refusal");
    assert.deepEqual(keptIds(dir), [id], "still kept until taken");
    a.send("command_result", { commandId: id, ok: true });
    await waitFor(() => keptIds(dir).length === 0, "dropped once taken");
    const rows = await audit(d);
    assert.equal(sendsOf(rows, id).length, 2);
    assert.equal(rows.filter((r) => r.action === "hook.prompt.failed").length, 0);
    await a.close();
  } finally {
    await d.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

Deno.test("hooks: a kept prompt refused past the bound is dropped and audited as failed", async () => {
  const { dir, id } = await keptFor("k-failed");
  const d = await startInProcess({ dataDir: dir });
  d.daemon.app.hooks.kept.retry = { firstMs: 20, maxMs: 40, forMs: 300 };
  try {
    const a = await plugin(d, "k-failed");
    let answered = 0;
    await waitFor(() => {
      // Refuse every send as it comes.
      for (; answered < promptsOf(a, id).length; answered++) {
        a.send("command_result", { commandId: id, ok: false, error: "no live pi session" });
      }
      return keptIds(dir).length === 0;
    }, "given up after the bound");
    const rows = await audit(d);
    const failed = rows.filter((r) => r.action === "hook.prompt.failed");
    assert.equal(failed.length, 1);
    assert.equal(failed[0].sessionId, "k-failed");
    assert.equal(failed[0].detail.promptId, id);
    assert.match(String(failed[0].detail.error), /no live pi session/);
    assert.ok(Number(failed[0].detail.tries) >= 2, `tries: ${failed[0].detail.tries}`);
    assert.equal(sendsOf(rows, id).length, Number(failed[0].detail.tries));
    await a.close();
  } finally {
    await d.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
