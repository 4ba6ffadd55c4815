/**
 * GitLab hooks reaching the real pi (0.73.1 and 1.6.0, RPC mode) through the plugin: a `/lvmh` comment on a
 * merge request and then a failed pipeline of the repository the session works on (`LVMH_REPO`) each arrive
 * at the fake LLM as the user's message, and the audit log names the GitLab hook as the actor.
 */
import assert from "node:assert/strict";
import { startDaemon, waitFor } from "../../testing/daemon.ts";
import { startFakeLlm } from "../../testing/fixtures/fake_llm.mjs";
import { allEvents, assertInstalled, makePiHome, PI_VERSIONS, piRpc, sessions } from "../../testing/pi.ts";
import { failedPipeline, noteOnMergeRequest } from "../../testing/fixtures/gitlab_hooks/payloads.ts";

type LlmRequest = { messages: { role: string; content: unknown }[] };
const SECRET = "gitlab-hook-secret-for-pi-test";

function userTexts(requests: LlmRequest[]): string[] {
  return requests.flatMap((r) => r.messages.filter((m) => m.role === "user")).map((m) =>
    typeof m.content === "string"
      ? m.content
      : (m.content as { type: string; text?: string }[]).map((p) => p.text ?? "").join("")
  );
}

for (const v of PI_VERSIONS) {
  Deno.test(`hooks on pi ${v.name}: a GitLab comment and a failed pipeline reach the session`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using home = await makePiHome(llm.url);
    await using d = await startDaemon({ env: { LVMH_GITLAB_HOOK_SECRET: SECRET } });
    await using pi = piRpc(v, home, home.env(d, { LVMH_REPO: "group/proj" }));
    const online = await waitFor(async () => (await sessions(d)).find((s) => s.online), "pi online", 20_000);
    assert.equal(online.repo, "group/proj");
    const id = online.id as string;
    const hook = (event: string, body: unknown, uuid: string) =>
      fetch(`${d.url}/hooks/gitlab`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-gitlab-event": event,
          "x-gitlab-token": SECRET,
          "x-gitlab-event-uuid": uuid,
        },
        body: JSON.stringify(body),
      });

    const note = await hook(
      "Note Hook",
      noteOnMergeRequest("/lvmh TEXTONLY reply with the word ready"),
      "n-1",
    );
    assert.equal(note.status, 202);
    await note.body?.cancel();
    await waitFor(
      () => userTexts(llm.requests as LlmRequest[]).some((t) => t.includes("reply with the word ready")),
      "the comment at the LLM",
      30_000,
    );
    assert.ok(userTexts(llm.requests as LlmRequest[]).some((t) => t.includes("@alice")));
    await waitFor(
      async () => (await allEvents(d, id) as { type: string }[]).some((e) => e.type === "agent_end"),
      "the first run ends",
      30_000,
    );

    const pipeline = await hook("Pipeline Hook", failedPipeline("feature/x"), "p-1");
    assert.equal(pipeline.status, 202);
    await pipeline.body?.cancel();
    await waitFor(
      () => userTexts(llm.requests as LlmRequest[]).some((t) => t.includes("Failed jobs: unit-tests")),
      "the pipeline failure at the LLM",
      30_000,
    );

    const audit = await (await d.api("/api/audit?limit=1000")).json();
    const prompts = audit.filter((e: { action: string }) => e.action === "hook.prompt");
    assert.equal(prompts.length, 2);
    assert.ok(
      prompts.every((e: { actor: string; sessionId: string }) =>
        e.actor === "hook:gitlab" && e.sessionId === id
      ),
    );
    await pi.stop();
    await llm.close();
  });
}
