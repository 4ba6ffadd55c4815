/**
 * The objects lvmh makes per session, as the JSON bodies it POSTs:
 * - a Secret `lvmh-s-<id>` with the session-scoped agent token (and models.json when configured), mounted
 *   as files readable by the worker's group (mode 0440 with an `fsGroup`), never put into env;
 * - a PersistentVolumeClaim `lvmh-ws-<id>` (ReadWriteOnce) holding the working copy and pi's session files;
 * - a Pod `lvmh-w-<id>` (restartPolicy Never) whose init container clones the repository into the claim on
 *   the session's branch, fetching the GitLab token once from the daemon with the session token, and whose
 *   worker container runs the bridge as in Docker.
 * Neither the Secret nor the claim is owned by the Pod: stopping deletes the Pod and keeps both, so a resume
 * is a new Pod on the same claim. The repository path cannot be a label value (it has slashes), so it is an
 * annotation. Nothing user-given is put into a shell script: URL and branch names are arguments.
 */

/** Labels every object lvmh makes carries. */
export const MANAGED_BY = { "app.kubernetes.io/managed-by": "lvmh" } as const;
/** The label naming an object's session. */
export const SESSION_LABEL = "lvmh.dev/session";
/** The annotation naming a worker's repository. */
export const REPO_ANNOTATION = "lvmh.dev/repo";
/** Selects lvmh's session workers. */
export const WORKER_SELECTOR = "app.kubernetes.io/managed-by=lvmh,app.kubernetes.io/component=worker";

/** The uid and gid the worker image runs as. */
export const WORKER_UID = 1000;

export const podName = (sessionId: string) => `lvmh-w-${sessionId}`;
export const secretName = (sessionId: string) => `lvmh-s-${sessionId}`;
export const claimName = (sessionId: string) => `lvmh-ws-${sessionId}`;

/** Where the init container writes what it did (the kubelet puts it into `terminated.message`). */
export const TERMINATION_LOG = "/dev/termination-log";

/** Labels of one session's object of one kind. */
export function sessionLabels(
  sessionId: string,
  component: "worker" | "workspace" | "session-secret" | "preflight",
): Record<string, string> {
  return { ...MANAGED_BY, "app.kubernetes.io/component": component, [SESSION_LABEL]: sessionId };
}

/** `1536Mi` for a byte count (rounded down to MiB, at least 1). */
export function memoryQuantity(bytes: number): string {
  return `${Math.max(1, Math.floor(bytes / 1024 ** 2))}Mi`;
}

/** `1500m` for 1.5 CPUs. */
export function cpuQuantity(cpus: number): string {
  return `${Math.max(1, Math.round(cpus * 1000))}m`;
}

/** The session Secret. */
export function secretBody(
  sessionId: string,
  o: { token: string; modelsJson: string | null },
): Record<string, unknown> {
  const stringData: Record<string, string> = { token: o.token };
  if (o.modelsJson !== null) stringData["models.json"] = o.modelsJson;
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: secretName(sessionId), labels: sessionLabels(sessionId, "session-secret") },
    type: "Opaque",
    immutable: true,
    stringData,
  };
}

/** The session's claim. */
export function claimBody(
  sessionId: string,
  repo: string,
  o: { size: string; storageClass: string | null },
): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: {
      name: claimName(sessionId),
      labels: sessionLabels(sessionId, "workspace"),
      annotations: { [REPO_ANNOTATION]: repo },
    },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: o.size } },
      ...(o.storageClass ? { storageClassName: o.storageClass } : {}),
    },
  };
}

/** What a worker Pod needs. */
export interface WorkerPodSpec {
  sessionId: string;
  repo: string;
  /** The branch the spawn asked for (shown to the plugin as `LVMH_BRANCH`); null for the default. */
  branch: string | null;
  image: string;
  /** The agent socket URL the worker dials; the clone credential route is on the same origin. */
  agentUrl: string;
  /** A stopped session's new worker: the init container keeps the working copy and never clones. */
  resume: boolean;
  clone: { url: string; baseBranch: string | null; baseSha: string | null; branch: string };
  /** The Secret holding the LLM key under `api-key`; null for none. */
  llmSecret: string | null;
  /** models.json is in the session Secret. */
  models: boolean;
  limits: { memoryBytes: number | null; cpus: number | null };
}

/** Every lvmh container's security context (workers, their init container, helpers). */
export const SECURITY = {
  allowPrivilegeEscalation: false,
  capabilities: { drop: ["ALL"] },
  runAsNonRoot: true,
  seccompProfile: { type: "RuntimeDefault" },
};

/** Every lvmh Pod's security context: the worker image's user, which owns the claim through the fsGroup. */
export const POD_SECURITY = {
  runAsNonRoot: true,
  runAsUser: WORKER_UID,
  runAsGroup: WORKER_UID,
  fsGroup: WORKER_UID,
  fsGroupChangePolicy: "OnRootMismatch",
  seccompProfile: { type: "RuntimeDefault" },
};

/** Requests equal to limits where set (a predictable worker), else none (the namespace's defaults). */
function resources(l: WorkerPodSpec["limits"]): Record<string, unknown> {
  const set: Record<string, string> = {};
  if (l.memoryBytes) set.memory = memoryQuantity(l.memoryBytes);
  if (l.cpus) set.cpu = cpuQuantity(l.cpus);
  return Object.keys(set).length ? { resources: { requests: { ...set }, limits: { ...set } } } : {};
}

/** The worker Pod (also the body of the preflight's dry-run create). */
export function podBody(s: WorkerPodSpec): Record<string, unknown> {
  const secretMount = { name: "session", mountPath: "/run/lvmh", readOnly: true };
  const env: Record<string, unknown>[] = [
    { name: "LVMH_URL", value: s.agentUrl },
    { name: "LVMH_SESSION_ID", value: s.sessionId },
    { name: "LVMH_AGENT", value: "1" },
    { name: "LVMH_REPO", value: s.repo },
    // /workspace is a subPath directory the kubelet made as root: without this, every git command the agent
    // runs there fails with "detected dubious ownership" (command-line config, which git honours for it).
    { name: "GIT_CONFIG_COUNT", value: "1" },
    { name: "GIT_CONFIG_KEY_0", value: "safe.directory" },
    { name: "GIT_CONFIG_VALUE_0", value: "/workspace" },
  ];
  if (s.branch) env.push({ name: "LVMH_BRANCH", value: s.branch });
  if (s.resume) env.push({ name: "LVMH_RESUME", value: "1" });
  if (s.models) env.push({ name: "LVMH_MODELS_JSON", value: "/run/lvmh/models.json" });
  if (s.llmSecret) {
    env.push({
      name: "ZAI_RENAUD_API_KEY",
      valueFrom: { secretKeyRef: { name: s.llmSecret, key: "api-key" } },
    });
  }
  const items = [{ key: "token", path: "token" }];
  if (s.models) items.push({ key: "models.json", path: "models.json" });
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: podName(s.sessionId),
      labels: sessionLabels(s.sessionId, "worker"),
      annotations: { [REPO_ANNOTATION]: s.repo },
    },
    spec: {
      restartPolicy: "Never",
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      terminationGracePeriodSeconds: 10,
      securityContext: POD_SECURITY,
      initContainers: [{
        name: "clone",
        image: s.image,
        imagePullPolicy: "IfNotPresent",
        // Arguments, never script text: the URL and branch names come from users.
        command: [
          "node",
          "/bridge/clone_init.mjs",
          s.resume ? "keep" : "clone",
          s.clone.url,
          s.clone.baseBranch ?? "",
          s.clone.baseSha ?? "",
          s.clone.branch,
        ],
        env: [
          { name: "LVMH_URL", value: s.agentUrl },
          { name: "LVMH_TOKEN_FILE", value: "/run/lvmh/token" },
          { name: "LVMH_CLAIM_DIR", value: "/claim" },
        ],
        terminationMessagePath: TERMINATION_LOG,
        terminationMessagePolicy: "FallbackToLogsOnError",
        // The whole claim: the init container makes the worker's two subPath directories itself, as the
        // worker's user (a directory the kubelet made for a subPath would be root's).
        volumeMounts: [{ name: "work", mountPath: "/claim" }, secretMount, {
          name: "tmp",
          mountPath: "/tmp",
        }],
        securityContext: SECURITY,
        ...resources(s.limits),
      }],
      containers: [{
        name: "worker",
        image: s.image,
        imagePullPolicy: "IfNotPresent",
        // The plugin reads its token from the environment; it is read here from the Secret's file so it is
        // never a value in the Pod spec. A fixed script: nothing user-given is in it.
        command: ["sh", "-c", 'LVMH_TOKEN="$(cat /run/lvmh/token)" exec node /bridge/index.mjs'],
        workingDir: "/workspace",
        env,
        terminationMessagePolicy: "FallbackToLogsOnError",
        volumeMounts: [
          { name: "work", mountPath: "/workspace", subPath: "workspace" },
          { name: "work", mountPath: "/pi-sessions", subPath: "pi-sessions" },
          secretMount,
          { name: "tmp", mountPath: "/tmp" },
          { name: "home", mountPath: "/home/node" },
        ],
        securityContext: SECURITY,
        ...resources(s.limits),
      }],
      volumes: [
        { name: "work", persistentVolumeClaim: { claimName: claimName(s.sessionId) } },
        { name: "session", secret: { secretName: secretName(s.sessionId), defaultMode: 0o440, items } },
        { name: "tmp", emptyDir: {} },
        { name: "home", emptyDir: {} },
      ],
    },
  };
}
