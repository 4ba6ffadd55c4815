/**
 * Test helper for the Kubernetes backend's tests: the backend and the spawner together against the fake API
 * server (loopback TLS, its own CA and token) with the scriptable kubelet, and the Pod statuses a test plays
 * the kubelet's part with (`setPodStatus`), so every state of the mapping is reached on purpose. Shared by
 * `kube_backend_test.ts` (a spawn's way through its states) and `kube_backend_restart_test.ts` (a watch, a
 * daemon or a token that changes under it). Not for production.
 */
import { DatabaseSync } from "node:sqlite";
import { type FakeKube, startFakeKube } from "../../testing/fixtures/kube_api.ts";
import { waitFor } from "../../testing/daemon.ts";
import { createKubeBackend, type KubeBackend } from "./kube_backend.ts";
import { createSpawner, type Spawner } from "../spawner.ts";
import { Workspaces } from "../workspaces.ts";
import { ContainerStates } from "./containers.ts";
import type { SpawnJob } from "../protocol.ts";
import { podName } from "../kube/objects.ts";

export const GITLAB_TOKEN = "glpat-kube-test-secret-0123456789";
export const SHA = "0123456789abcdef0123456789abcdef01234567";
export const now = () => new Date().toISOString().replace(/\.\d+Z$/, "Z");

export interface Env {
  fake: FakeKube;
  backend: KubeBackend;
  spawner: Spawner;
  workspaces: Workspaces;
  jobs: SpawnJob[];
  logs: string[];
  /** The daemon token's part of each agent token (a changed LVMH_TOKEN changes it). */
  tokenSuffix: string;
  /** Another backend and spawner on the same cluster (a restarted daemon); `wait: false` returns at once. */
  restart(o?: { wait?: boolean }): Promise<void>;
  close(): Promise<void>;
}

export async function setup(o: { startTimeoutMs?: number } = {}): Promise<Env> {
  const fake = await startFakeKube({ kubelet: "script", bookmarkMs: 200 });
  const db = new DatabaseSync(":memory:");
  const workspaces = new Workspaces(db);
  const containers = new ContainerStates(db);
  const logs: string[] = [];
  const env = { fake, workspaces, logs, jobs: [] as SpawnJob[], tokenSuffix: "hmac" } as Env;
  const make = () => {
    env.backend = createKubeBackend({
      workerImage: "registry.example/lvmh-worker:1",
      modelsJson: null,
      workerLimits: { memoryBytes: 512 * 1024 ** 2, cpus: 1 },
      kube: {
        connection: {
          url: fake.url,
          namespace: fake.namespace,
          tokenFile: fake.tokenFile,
          caFile: fake.caFile,
        },
        storageClass: null,
        storageSize: "1Gi",
        llmSecret: "lvmh-llm",
        startTimeoutMs: o.startTimeoutMs ?? 300_000,
      },
    }, {
      credential: () => GITLAB_TOKEN,
      onCloned: (sessionId, repo, base) => workspaces.record(sessionId, { ...base, repo }),
      log: (line) => logs.push(line),
      watch: { backoffMs: 50 },
    });
    env.spawner = createSpawner({
      config: { port: 1, workerUrl: "ws://127.0.0.1:1/agent/ws" },
      backend: env.backend,
      publishJobs: (jobs) => env.jobs = jobs,
      registerSession: () => {},
      repos: { cloneUrl: (repo) => `https://gitlab.example/${repo}.git`, credential: () => GITLAB_TOKEN },
      agentToken: (id) => Promise.resolve(`agent.${id}.${env.tokenSuffix}`),
      workspaces,
      containers,
    });
  };
  make();
  env.restart = async (o = {}) => {
    await env.spawner.shutdown();
    await env.backend.close();
    make();
    if (o.wait !== false) await env.spawner.recovered();
  };
  env.close = async () => {
    await env.spawner.shutdown();
    await env.backend.close();
    await fake.close();
  };
  return env;
}

/**
 * A Pod status as the kubelet writes it: the phase, the scheduling condition (scheduled unless given),
 * Initialized once the clone is done, and the clone's and the worker's container states where given.
 */
export const podStatus = (o: {
  phase: "Pending" | "Running" | "Failed";
  scheduled?: Record<string, unknown>;
  initialized?: boolean;
  clone?: Record<string, unknown>;
  worker?: Record<string, unknown>;
}) => ({
  phase: o.phase,
  conditions: [
    o.scheduled ?? { type: "PodScheduled", status: "True", lastTransitionTime: now() },
    ...(o.initialized ? [{ type: "Initialized", status: "True", lastTransitionTime: now() }] : []),
  ],
  ...(o.clone ? { initContainerStatuses: [container("clone", o.clone)] } : {}),
  ...(o.worker ? { containerStatuses: [container("worker", o.worker)] } : {}),
});
export const container = (name: string, state: Record<string, unknown>) => ({
  name,
  ready: name === "worker" && "running" in state,
  restartCount: 0,
  image: "x",
  imageID: "",
  state,
});
/** The clone's end: its `terminated.message` is what the backend reads the base (or its failure) from. */
export const cloned = (message: string, exitCode = 0) => ({
  terminated: {
    exitCode,
    reason: exitCode ? "Error" : "Completed",
    message,
    startedAt: now(),
    finishedAt: now(),
  },
});
export const initializing = { waiting: { reason: "PodInitializing" } };
export const cloning = () =>
  podStatus({ phase: "Pending", clone: { running: { startedAt: now() } }, worker: initializing });
/** What a clone that made a working copy of main at SHA says. */
export const baseOf = (sessionId: string) =>
  `lvmh: base main ${SHA} lvmh/${sessionId.replaceAll("-", "").slice(0, 8)}`;
/** The worker runs after a clone that made a working copy (or, for a resume, `lvmh: kept` it). */
export const running = (sessionId: string, clone = baseOf(sessionId)) =>
  podStatus({
    phase: "Running",
    initialized: true,
    clone: cloned(clone),
    worker: { running: { startedAt: now() } },
  });

/** The one job's state, and the Pod once the backend made it. */
export const jobOf = (env: Env) => env.jobs[0];
export const podMade = (env: Env) =>
  waitFor(() => env.fake.list("pods").length > 0, "the Pod was created", 5000);
/** The spawn answers once the Pod is created; the job goes on to `running` (or `failed`) after. */
export const settled = (env: Env, state: "running" | "failed") =>
  waitFor(() => jobOf(env)?.state === state, `the job ${state}`, 10_000);

/** Spawn a session whose Pod then runs, once its job is `running`; its session id. */
export async function spawnRunning(env: Env): Promise<string> {
  const spawned = env.spawner.spawn({ repo: "group/sub/proj" });
  await podMade(env);
  const id = jobOf(env).sessionId;
  env.fake.setPodStatus(podName(id), running(id));
  await spawned;
  await settled(env, "running");
  return id;
}
