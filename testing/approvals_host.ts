/** The plugin's approvals under the fake pi host: start one welcomed, wait for its requests and answers. */
import { fakePi } from "./fake_pi.ts";
import { createLvmhAgent } from "../plugin/lvmh-agent.mjs";
import type { FakeDaemon } from "./plugin_host.ts";

/** A fake pi with the plugin against `d`, welcomed. */
export async function started(
  d: FakeDaemon,
  home: string,
  id: string,
  env: Record<string, string> = {},
) {
  const fake = fakePi(id);
  createLvmhAgent({ url: d.url, token: d.token, home, env })(fake.pi);
  await fake.fire("session_start", { reason: "startup" });
  await d.waitFrame((f) => f.type === "hello", "hello");
  return fake;
}

export const request = (d: FakeDaemon, toolCallId: string) =>
  d.waitFrame(
    (f) => f.type === "approval_request" && f.toolCallId === toolCallId,
    `request ${toolCallId}`,
  );
export const resolved = (d: FakeDaemon, approvalId: unknown) =>
  d.waitFrame(
    (f) => f.type === "approval_resolved" && f.approvalId === approvalId,
    "approval_resolved",
  );
export const call = (
  id: string,
  toolName = "bash",
  input: unknown = { command: "ls" },
) => ({
  toolCallId: id,
  toolName,
  input,
});
/** Whether `p` is still pending after the plugin had a moment to act. */
export async function pending(p: Promise<unknown>): Promise<boolean> {
  const tick = Symbol();
  return await Promise.race([
    p,
    new Promise((r) => setTimeout(() => r(tick), 50)),
  ]) === tick;
}
