/**
 * The Kubernetes preflight's verdict, kept: `ping` and every spawn ask it, so it is not run against the API
 * server each time. A passing verdict is kept for good; a failing one is run again after a while, since a
 * person fixes the Role without restarting lvmh. The check itself is `lib/kube/preflight.ts`; this module
 * only decides when to run it, on which sample Pod, and logs each new problem once.
 */
import type { KubeClient } from "../kube/client.ts";
import { podBody } from "../kube/objects.ts";
import { preflight } from "../kube/preflight.ts";

/** A failed preflight is run again on a spawn after this long (a fixed Role needs no restart). */
const PREFLIGHT_RETRY_MS = 30_000;

/** What the sample worker Pod is made of: the real image, LLM Secret, models and limits. */
export interface PreflightSample {
  workerImage: string;
  llmSecret: string | null;
  models: boolean;
  limits: { memoryBytes: number | null; cpus: number | null };
}

/**
 * @returns the verdict's reader: null when spawning may go ahead, else the problem in one sentence. Calls
 * while a check runs share it.
 */
export function preflightVerdict(
  client: KubeClient,
  sample: PreflightSample,
  log: (line: string) => void,
): () => Promise<string | null> {
  let verdict: { at: number; problem: string | null } | null = null;
  let running: Promise<string | null> | null = null;
  // The dry run admits a worker Pod exactly as a spawn builds it, for a session that does not exist.
  const samplePod = () =>
    podBody({
      sessionId: "00000000-0000-4000-8000-000000000000",
      repo: "preflight/sample",
      branch: null,
      image: sample.workerImage,
      agentUrl: "ws://127.0.0.1/agent/ws",
      resume: false,
      clone: {
        url: "https://example.invalid/preflight.git",
        baseBranch: null,
        baseSha: null,
        branch: "lvmh/0",
      },
      llmSecret: sample.llmSecret,
      models: sample.models,
      limits: sample.limits,
    });
  return async (): Promise<string | null> => {
    if (verdict && (verdict.problem === null || Date.now() - verdict.at < PREFLIGHT_RETRY_MS)) {
      return verdict.problem;
    }
    running ??= preflight(client, samplePod()).then((problem) => {
      if (problem && problem !== verdict?.problem) log(`lvmh: ${problem}`);
      verdict = { at: Date.now(), problem };
      return problem;
    }).finally(() => running = null);
    return await running;
  };
}
