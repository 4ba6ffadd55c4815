/**
 * The git helpers (changes, export, bundle, push) on Kubernetes: each job is one short-lived Pod
 * (`restartPolicy: Never`, `activeDeadlineSeconds` as the backstop should the daemon die meanwhile) that
 * mounts the session's claim at /workspace (read-only unless the job writes), on the node of the session's
 * worker while it runs (the claim is ReadWriteOnce: a Pod elsewhere could not attach it), and is deleted
 * after. Its stdout is read from `pods/log`; its stderr is kept in a file and the last of it written to the
 * termination message, so the two stay apart as they do with Docker.
 *
 * A job with a secret or files (the push: the GitLab token and the bundle) gets them as the clone does: the
 * Pod holds only a token of its own one-off id (`helper-<uuid>`, in a Secret mounted into this Pod alone),
 * and fetches its inputs once from the daemon's `GET /agent/clone-credential`; the GitLab token never
 * becomes a Kubernetes object, env value or argument, and the agent's own session token cannot fetch it.
 */
import type { HelperJob, HelperOutput, HelperRunner } from "../../docker/helper.ts";
import { HelperError, lastLines } from "../../docker/helper.ts";
import type { CloneCredential } from "../spawn/backend.ts";
import { codeOf, type KubeClient } from "./client.ts";
import {
  claimName,
  cpuQuantity,
  MANAGED_BY,
  memoryQuantity,
  POD_SECURITY,
  SECURITY,
  SESSION_LABEL,
} from "./objects.ts";
import type { PodLike } from "./pod_state.ts";
import { HELPER_ID_PREFIX } from "../auth.ts";

/** Selects lvmh's helper Pods. */
export const HELPER_SELECTOR = "app.kubernetes.io/managed-by=lvmh,app.kubernetes.io/component=helper";
/** Selects the Secrets holding a helper Pod's one-off token. */
export const HELPER_SECRET_SELECTOR =
  "app.kubernetes.io/managed-by=lvmh,app.kubernetes.io/component=helper-secret";
/** The label saying a helper needs no network (the NetworkPolicy denies its egress). */
export const NETWORK_LABEL = "lvmh.dev/network";
/** The one-off ids helper Pods fetch their inputs with (lib/auth.ts says what their tokens may do). */
export const HELPER_INPUT_PREFIX = HELPER_ID_PREFIX;

/** How long a helper Pod may wait to be scheduled and started, beyond its job's own time. */
const START_ALLOWANCE_MS = 120_000;
/** A waiting reason that will not get better by itself. */
const STUCK = new Set([
  "ErrImagePull",
  "ImagePullBackOff",
  "InvalidImageName",
  "CreateContainerConfigError",
  "CreateContainerError",
]);

/**
 * The first line of a helper's termination message: how many bytes it wrote to stdout, which the daemon reads
 * back from `pods/log` and checks, since a kubelet cuts a long log when it rotates it.
 */
const STDOUT_BYTES = "lvmh-stdout-bytes";

/**
 * Runs the job's script ($1 and after) with stdin from the fetched input (or nothing), stdout into a file then
 * printed (its byte count opens the termination message), stderr into a file whose end follows it there, and
 * the script's exit code as the container's. `$1` is the
 * input fetcher, run first when the Pod has a token to fetch with. Fixed text: nothing user-given is in it.
 */
const WRAPPER = `f=$1; shift
err=/tmp/lvmh-helper.err
out=/tmp/lvmh-helper.out
: > "$err"
if [ -s /run/lvmh-helper/token ]; then
  node -e "$f" 2>>"$err" || { tail -c 3000 "$err" > /dev/termination-log; exit 97; }
fi
if [ -f /run/lvmh/stdin ]; then in=/run/lvmh/stdin; else in=/dev/null; fi
sh -c "$@" < "$in" > "$out" 2>>"$err"
code=$?
rm -f /run/lvmh/stdin
cat "$out"
{ printf '${STDOUT_BYTES} %s\\n' "$(wc -c < "$out" | tr -d ' ')"; tail -c 3000 "$err"; } > /dev/termination-log
exit $code
`;

/** The stdout count and the stderr tail of a termination message (no count when the helper failed early). */
export function splitTermination(message: string): { bytes: number | null; stderr: string } {
  const match = new RegExp(`^${STDOUT_BYTES} (\\d+)\\n`).exec(message);
  return match
    ? { bytes: Number(match[1]), stderr: message.slice(match[0].length) }
    : { bytes: null, stderr: message };
}

/** Fetches the helper's inputs once: files written where the job wants them, the secret as stdin. */
const FETCH_INPUT = `const fs = require("node:fs");
(async () => {
  const token = fs.readFileSync("/run/lvmh-helper/token", "utf8").trim();
  const origin = new URL(process.env.LVMH_URL);
  origin.protocol = origin.protocol === "wss:" ? "https:" : "http:";
  const res = await fetch(new URL("/agent/clone-credential", origin), {
    headers: { authorization: "Bearer " + token },
  });
  if (!res.ok) throw new Error("the daemon gave no helper input (HTTP " + res.status + ")");
  const input = await res.json();
  for (const f of input.files || []) fs.writeFileSync(f.path, Buffer.from(f.data, "base64"), { mode: 0o600 });
  if (typeof input.credential === "string") {
    fs.writeFileSync("/run/lvmh/stdin", input.credential, { mode: 0o600 });
  }
})().catch((e) => { console.error("lvmh: " + e.message); process.exit(97); });
`;

export interface HelperPodDeps {
  client: KubeClient;
  image: string;
  /** The agent socket URL workers dial; the input route is on its origin. */
  agentUrl: string;
  /** A token that authenticates as `id` on the agent routes (`lib/auth.ts` agentToken). */
  agentToken(id: string): Promise<string>;
  limits: { memoryBytes: number | null; cpus: number | null };
  /** The node of the session's worker Pod while it runs, else null (the scheduler places the helper). */
  nodeOf(sessionId: string): string | null;
  /** Poll interval while a helper runs (tests). */
  pollMs?: number;
}

/** The Kubernetes runner, plus the one-shot hand-out of a helper Pod's inputs. */
export interface KubeHelperRunner extends HelperRunner {
  /** The inputs of the helper Pod whose one-off id this is, once; null for any other id. */
  take(id: string): CloneCredential | null;
  /** The helper Pods (and their Secrets, same name) this runner is running now. */
  running(): ReadonlySet<string>;
}

/** A helper writes only its claim and /tmp: its image's files are read-only. */
const HELPER_SECURITY = { ...SECURITY, readOnlyRootFilesystem: true };

/** The helper Pod's body (exported for tests: what lvmh sends is checked against the schemas). */
export function helperPodBody(
  name: string,
  job: HelperJob,
  o: {
    image: string;
    agentUrl: string;
    nodeName: string | null;
    inputSecret: string | null;
    limits: HelperPodDeps["limits"];
  },
): Record<string, unknown> {
  const timeoutMs = job.timeoutMs ?? 10 * 60_000;
  const labels: Record<string, string> = {
    ...MANAGED_BY,
    "app.kubernetes.io/component": "helper",
    "lvmh.dev/helper": job.kind,
    ...(job.workingCopy ? { [SESSION_LABEL]: job.workingCopy.sessionId } : {}),
    ...(job.network ? {} : { [NETWORK_LABEL]: "none" }),
  };
  const env = [
    { name: "LVMH_URL", value: o.agentUrl },
    ...(job.env ?? []).map((e) => {
      const eq = e.indexOf("=");
      return { name: e.slice(0, eq), value: e.slice(eq + 1) };
    }),
  ];
  const mounts: Record<string, unknown>[] = [
    { name: "tmp", mountPath: "/tmp" },
    { name: "run", mountPath: "/run/lvmh" },
  ];
  const volumes: Record<string, unknown>[] = [
    { name: "tmp", emptyDir: {} },
    { name: "run", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } },
  ];
  if (job.workingCopy) {
    mounts.push({
      name: "work",
      mountPath: "/workspace",
      subPath: "workspace",
      readOnly: job.workingCopy.readOnly,
    });
    volumes.push({
      name: "work",
      persistentVolumeClaim: {
        claimName: claimName(job.workingCopy.sessionId),
        readOnly: job.workingCopy.readOnly,
      },
    });
  }
  if (o.inputSecret) {
    mounts.push({ name: "input", mountPath: "/run/lvmh-helper", readOnly: true });
    volumes.push({
      name: "input",
      secret: { secretName: o.inputSecret, defaultMode: 0o440, items: [{ key: "token", path: "token" }] },
    });
  }
  const set: Record<string, string> = {};
  if (o.limits.memoryBytes) set.memory = memoryQuantity(o.limits.memoryBytes);
  if (o.limits.cpus) set.cpu = cpuQuantity(o.limits.cpus);
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, labels },
    spec: {
      restartPolicy: "Never",
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      terminationGracePeriodSeconds: 5,
      // The backstop for a daemon that died while the helper ran: the kubelet ends it past this.
      activeDeadlineSeconds: Math.ceil((timeoutMs + START_ALLOWANCE_MS) / 1000),
      ...(o.nodeName ? { nodeName: o.nodeName } : {}),
      securityContext: POD_SECURITY,
      containers: [{
        name: "helper",
        image: o.image,
        imagePullPolicy: "IfNotPresent",
        command: ["sh", "-c", WRAPPER, "lvmh-helper", FETCH_INPUT, ...job.cmd],
        workingDir: job.workingDir ?? "/",
        env,
        terminationMessagePath: "/dev/termination-log",
        terminationMessagePolicy: "File",
        volumeMounts: mounts,
        securityContext: HELPER_SECURITY,
        ...(Object.keys(set).length ? { resources: { requests: { ...set }, limits: { ...set } } } : {}),
      }],
      volumes,
    },
  };
}

type HelperPod = PodLike & { spec?: { nodeName?: string } };

/** Build the runner. */
export function kubeHelperRunner(deps: HelperPodDeps): KubeHelperRunner {
  const { client } = deps;
  const inputs = new Map<string, CloneCredential>();
  const inFlight = new Set<string>();
  const pollMs = deps.pollMs ?? 250;

  const remove = async (resource: string, name: string) => {
    await client.json("DELETE", client.path(resource, name), {
      body: {
        kind: "DeleteOptions",
        apiVersion: "v1",
        gracePeriodSeconds: 0,
        propagationPolicy: "Background",
      },
    }).catch((error) => {
      if (codeOf(error) !== 404) throw error;
    });
  };

  /** Poll the Pod until its container ended; what it ended with. */
  const awaitEnd = async (name: string, job: HelperJob) => {
    const timeoutMs = job.timeoutMs ?? 10 * 60_000;
    const deadline = Date.now() + timeoutMs + START_ALLOWANCE_MS;
    for (let wait = 50;; wait = Math.min(wait * 2, pollMs * 4)) {
      const pod = await client.json<HelperPod>("GET", client.path("pods", name));
      const status = pod.status?.containerStatuses?.find((c) => c.name === "helper");
      const ended = status?.state?.terminated;
      if (ended) {
        return { code: ended.exitCode ?? -1, message: ended.message ?? "", reason: ended.reason ?? "" };
      }
      const waiting = status?.state?.waiting;
      if (waiting?.reason && STUCK.has(waiting.reason)) {
        throw new HelperError(`${job.failure}: ${waiting.reason}: ${waiting.message ?? ""}`.trim(), -1);
      }
      if (pod.status?.phase === "Failed") {
        throw new HelperError(
          `${job.failure}: the helper Pod failed: ${pod.status.reason ?? ""} ${pod.status.message ?? ""}`
            .trim(),
          -1,
        );
      }
      if (Date.now() > deadline) {
        const scheduled = pod.status?.conditions?.find((c) => c.type === "PodScheduled");
        const why = scheduled?.status === "False" ? ` (${scheduled.message ?? scheduled.reason})` : "";
        throw new HelperError(`${job.failure}: did not finish within ${timeoutMs} ms${why}`, -1);
      }
      await new Promise((r) => setTimeout(r, Math.min(wait, pollMs)));
    }
  };

  return {
    take(id) {
      const input = inputs.get(id);
      if (!input) return null;
      inputs.delete(id);
      return input;
    },

    running: () => inFlight,

    async run(job): Promise<HelperOutput> {
      const suffix = crypto.randomUUID().replaceAll("-", "").slice(0, 12);
      const name = `lvmh-h-${job.kind}-${suffix}`;
      inFlight.add(name);
      const needsInput = job.secret !== null || (job.files?.entries.length ?? 0) > 0;
      const inputId = `${HELPER_INPUT_PREFIX}${crypto.randomUUID()}`;
      let secretMade = false;
      let podMade = false;
      try {
        if (needsInput) {
          inputs.set(inputId, {
            credential: job.secret,
            files: (job.files?.entries ?? []).map((e) => ({
              path: `${job.files!.dir}/${e.path}`,
              data: encodeBase64(e.data),
            })),
          });
          await client.json("POST", client.path("secrets"), {
            body: {
              apiVersion: "v1",
              kind: "Secret",
              metadata: {
                name,
                labels: { ...MANAGED_BY, "app.kubernetes.io/component": "helper-secret" },
              },
              type: "Opaque",
              immutable: true,
              stringData: { token: await deps.agentToken(inputId) },
            },
            query: { fieldValidation: "Strict" },
          });
          secretMade = true;
        }
        const body = helperPodBody(name, job, {
          image: deps.image,
          agentUrl: deps.agentUrl,
          nodeName: job.workingCopy ? deps.nodeOf(job.workingCopy.sessionId) : null,
          inputSecret: needsInput ? name : null,
          limits: deps.limits,
        });
        await client.json<HelperPod>("POST", client.path("pods"), {
          body,
          query: { fieldValidation: "Strict" },
        });
        podMade = true;
        const end = await awaitEnd(name, job);
        const stdout = await client.text(client.path("pods", name, "log"), { container: "helper" });
        const { bytes, stderr } = splitTermination(end.message);
        if (end.code === 0 && bytes !== null && new TextEncoder().encode(stdout).length !== bytes) {
          // A kubelet rotates a container's log past its size limit (10 MiB by default): never a cut answer.
          throw new HelperError(
            `${job.failure}: its output was cut short (${bytes} bytes written, fewer in the Pod's log)`,
            0,
          );
        }
        if (end.code !== 0) {
          const why = end.reason === "OOMKilled" ? "out of memory (OOMKilled)" : `exit code ${end.code}`;
          throw new HelperError(`${job.failure}: ${lastLines(stderr) || why}`, end.code);
        }
        return { stdout, stderr };
      } finally {
        inFlight.delete(name);
        inputs.delete(inputId);
        if (podMade) await remove("pods", name).catch(() => {});
        if (secretMade) await remove("secrets", name).catch(() => {});
      }
    },
  };
}

/** Base64 of bytes. */
function encodeBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}
