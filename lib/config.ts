/**
 * Daemon configuration, read once from the environment at start-up.
 */
import { z } from "zod";
import { join } from "node:path";
import { generateToken } from "./auth.ts";
import { type AskSet, ToolName } from "./protocol.ts";
import { type KubeSettings, resolveKube } from "./kube/settings.ts";

/** A configuration value that cannot be used; the message names the variable. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** `all`, `none`, or a comma list of tool names (`bash,edit,write`). */
const AskEnv = z.string().transform((v, ctx): AskSet => {
  const text = v.trim().toLowerCase();
  if (text === "all") return "all";
  if (text === "none") return [];
  const names = text.split(",").map((t) => t.trim()).filter(Boolean);
  for (const name of names) {
    if (!ToolName.safeParse(name).success) {
      ctx.addIssue({ code: "custom", message: `"${name}" is not a tool name (use all, none or a,b,c)` });
      return z.NEVER;
    }
  }
  return [...new Set(names)];
});

/** A budget: dollars (`5`, `$2.50`) or input+output tokens (`200000t`), then `,ask` (default) or `,stop`. */
const BudgetEnv = z.string().transform((v, ctx): ConfigBudget => {
  const m = /^\s*(\$?)([0-9]+(?:\.[0-9]+)?)\s*(t)?\s*(?:,\s*(ask|stop)\s*)?$/i.exec(v);
  const amount = m ? Number(m[2]) : NaN;
  if (!m || !(amount > 0) || (m[1] && m[3])) {
    ctx.addIssue({ code: "custom", message: "must be dollars (5) or tokens (200000t), then ,ask or ,stop" });
    return z.NEVER;
  }
  const onReach = (m[4]?.toLowerCase() ?? "ask") as ConfigBudget["onReach"];
  return m[3] ? { maxTokens: Math.trunc(amount), onReach } : { maxCost: amount, onReach };
});

const Env = z.object({
  LVMH_TOKEN: z.string().min(16, "must be at least 16 characters").regex(
    /^[\x21-\x7e]+$/,
    "must be printable ASCII",
  )
    .optional(),
  LVMH_HOST: z.string().min(1).regex(/^[A-Za-z0-9.:\-\[\]]+$/, "must be a host name or IP address").default(
    "127.0.0.1",
  ),
  LVMH_PORT: z.coerce.number().int().min(0).max(65535).default(8686),
  LVMH_DATA_DIR: z.string().min(1).default("./data"),
  LVMH_CONTAINER_DOCKER_SOCK: z.string().startsWith("/", "must be an absolute path").default(
    "/var/run/docker.sock",
  ),
  LVMH_GITLAB_URL: z.url().refine((u) => /^https?:\/\//.test(u), "must be http(s)").default(
    "https://gitlab.com",
  ),
  LVMH_WORKER_IMAGE: z.string().regex(
    /^[a-z0-9][a-z0-9._\/:-]*(@sha256:[0-9a-f]{64})?$/,
    "must be an image reference (name:tag or name@sha256:digest)",
  ).default(
    "lvmh-worker:latest",
  ),
  LVMH_WORKER_BASE_IMAGE: z.string().regex(/^[a-z0-9][a-z0-9._\/:-]*$/, "must be an image reference").default(
    "node:22-bookworm-slim",
  ),
  LVMH_WORKER_NETWORK: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, "must be a network name").default(
    "host",
  ),
  LVMH_WORKER_MEMORY: z.string().regex(/^[1-9][0-9]*[kmg]?$/i, "must be a size such as 512m or 4g").transform(
    (v) => Number.parseInt(v) * ({ k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[v.slice(-1).toLowerCase()] ?? 1),
  ).refine((bytes) => bytes >= 64 * 1024 ** 2, "must be at least 64m").optional(),
  LVMH_WORKER_CPUS: z.coerce.number().positive("must be a positive number of CPUs").max(1024).optional(),
  LVMH_WORKER_PIDS: z.coerce.number().int().min(64, "must be at least 64").optional(),
  LVMH_RETENTION_DAYS: z.coerce.number().int().min(1, "must be a whole number of days, at least 1")
    .optional(),
  LVMH_WORKER_URL: z.string().regex(/^wss?:\/\//, "must be a ws:// or wss:// URL").optional(),
  LVMH_MODELS_JSON: z.string().startsWith("/", "must be an absolute path").optional(),
  ZAI_RENAUD_API_KEY: z.string().optional(),
  LVMH_ASK: AskEnv.optional(),
  LVMH_SIGNIN_LIMIT: z.coerce.number().int().min(1).max(1_000_000).default(10),
  LVMH_SPAWN_ASK: AskEnv.default(["bash", "edit", "write"]),
  LVMH_SPAWN_BUDGET: BudgetEnv.optional(),
  LVMH_BUDGET: BudgetEnv.optional(),
  LVMH_DAILY_BUDGET: BudgetEnv.optional(),
  LVMH_SPAWN_BACKEND: z.enum(["docker", "kubernetes"]).default("docker"),
  LVMH_REPLICA_ID: z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, "must be 1–128 of A-Z a-z 0-9 . _ : -")
    .optional(),
  LVMH_DATABASE_URL: z.string().superRefine((v, ctx) => {
    const problem = databaseUrlProblem(v);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  }).optional(),
  LVMH_DATABASE_CA_FILE: z.string().startsWith("/", "must be an absolute path").optional(),
  LVMH_KUBE_URL: z.url().refine((u) => /^https?:\/\//.test(u), "must be http(s)").optional(),
  LVMH_KUBE_TOKEN_FILE: z.string().startsWith("/", "must be an absolute path").optional(),
  LVMH_KUBE_CA_FILE: z.string().startsWith("/", "must be an absolute path").optional(),
  LVMH_KUBE_NAMESPACE: z.string().regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, "must be a namespace name")
    .optional(),
  LVMH_KUBE_STORAGE_CLASS: z.string().regex(/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/, "must be a class name")
    .optional(),
  LVMH_KUBE_STORAGE_SIZE: z.string().regex(/^[1-9][0-9]*(Ki|Mi|Gi|Ti)$/, "must be a size such as 10Gi")
    .default("10Gi"),
  LVMH_KUBE_LLM_SECRET: z.string().regex(/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/, "must be a Secret name")
    .optional(),
  LVMH_KUBE_START_TIMEOUT: z.coerce.number().positive("must be a positive number of seconds").default(300),
  LVMH_STALL_MINUTES: z.coerce.number().positive("must be a positive number of minutes").default(10),
  LVMH_IDLE_STOP_MINUTES: z.coerce.number().positive("must be a positive number of minutes").optional(),
  LVMH_WEBHOOK_LEASE_SECONDS: z.coerce.number().int().min(1, "must be a whole number of seconds, at least 1")
    .max(86_400).default(60),
  LVMH_HOOK_LEASE_SECONDS: z.coerce.number().int().min(1, "must be a whole number of seconds, at least 1")
    .max(3600).default(30),
  // The same rule as `PUT /api/hooks/gitlab`'s body: a secret the API would refuse is refused here too.
  LVMH_GITLAB_HOOK_SECRET: z.string().min(16, "must be at least 16 characters").max(
    256,
    "must be at most 256 characters",
  ).optional(),
});

/** Variables whose value is a secret: a refusal names them but never echoes what they hold. */
const SECRET_VARIABLES = new Set([
  "LVMH_TOKEN",
  "LVMH_GITLAB_HOOK_SECRET",
  "ZAI_RENAUD_API_KEY",
  "LVMH_DATABASE_URL",
]);

/** A budget from the environment: one limit or both, and what reaching it does. */
export interface ConfigBudget {
  maxCost?: number;
  maxTokens?: number;
  onReach: "ask" | "stop";
}

export interface Config {
  token: string;
  /** True when the token was generated on this start (print it once). */
  tokenGenerated: boolean;
  host: string;
  port: number;
  dataDir: string;
  dbPath: string;
  dockerSock: string;
  gitlabUrl: string;
  workerImage: string;
  workerBaseImage: string;
  workerNetwork: string;
  /** Offline sessions idle for longer than this many days are deleted; null keeps everything. */
  retentionDays: number | null;
  /** Resource limits of each worker container; null means none. */
  workerLimits: { memoryBytes: number | null; cpus: number | null; pids: number | null };
  /** The agent socket URL containers dial; defaults to this daemon on the host network. */
  workerUrl: string | null;
  modelsJson: string | null;
  providerKey: string | null;
  /** Tools that wait for approval in local sessions without an ask set of their own (`LVMH_ASK`). */
  localAsk: AskSet;
  /** The ask set of spawned sessions unless the spawn names one (`LVMH_SPAWN_ASK`). */
  spawnAsk: AskSet;
  /** Budget of spawned sessions without one of their own (`LVMH_SPAWN_BUDGET`); null: none. */
  spawnBudget: ConfigBudget | null;
  /** Budget of terminal sessions without one of their own (`LVMH_BUDGET`); null: none. */
  localBudget: ConfigBudget | null;
  /** Deployment-wide cap per UTC day across all sessions (`LVMH_DAILY_BUDGET`, always `stop`); null: none. */
  dailyBudget: ConfigBudget | null;
  /** Failed authentications per minute and address before they are slowed (`LVMH_SIGNIN_LIMIT`). */
  signinLimit: number;
  /** Minutes without an event before a running session counts as stalled (`LVMH_STALL_MINUTES`). */
  stallMinutes: number;
  /** Minutes a spawned session may sit idle before its worker is stopped (`LVMH_IDLE_STOP_MINUTES`); null: never. */
  idleStopMinutes: number | null;
  /** How long a replica's claim on a webhook delivery keeps it from the others (`LVMH_WEBHOOK_LEASE_SECONDS`). */
  webhookLeaseSeconds: number;
  /** How long a replica's claim on a kept hook prompt keeps it from the others (`LVMH_HOOK_LEASE_SECONDS`). */
  hookLeaseSeconds: number;
  /** The GitLab hook secret from the environment, which wins over one set through the API; null when unset. */
  gitlabHookSecret: string | null;
  /** Where spawned sessions run (`LVMH_SPAWN_BACKEND`). */
  spawnBackend: "docker" | "kubernetes";
  /** The Kubernetes settings (`LVMH_KUBE_*`); null unless the backend is `kubernetes`. */
  kube: KubeSettings | null;
  /** This daemon's name among the replicas of a deployment (`LVMH_REPLICA_ID`, else host name and pid). */
  replicaId: string;
  /**
   * PostgreSQL (`LVMH_DATABASE_URL`) and the PEM file of the CA its certificate is verified with
   * (`LVMH_DATABASE_CA_FILE`); null: SQLite in the data dir.
   */
  database: { url: string; caFile: string | null } | null;
}

/**
 * Read and validate the configuration; creates the data dir and, without `LVMH_TOKEN`, a persisted token.
 * @throws {ConfigError} naming the first invalid variable.
 */
export function loadConfig(env: Record<string, string | undefined> = Deno.env.toObject()): Config {
  // An empty variable (as `LVMH_TOKEN=` in a compose file) means "unset".
  const set = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const parsed = Env.safeParse(set);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const value = set[String(issue.path[0])];
    const shown = SECRET_VARIABLES.has(String(issue.path[0])) || value === undefined
      ? ""
      : ` (got ${JSON.stringify(value)})`;
    throw new ConfigError(`${String(issue.path[0])}: ${issue.message}${shown}`);
  }
  const e = parsed.data;
  try {
    Deno.mkdirSync(e.LVMH_DATA_DIR, { recursive: true });
  } catch (error) {
    throw new ConfigError(
      `LVMH_DATA_DIR: cannot create ${JSON.stringify(e.LVMH_DATA_DIR)}: ${(error as Error).message}`,
    );
  }
  const kube = e.LVMH_SPAWN_BACKEND === "kubernetes"
    ? resolveKube({
      url: e.LVMH_KUBE_URL,
      tokenFile: e.LVMH_KUBE_TOKEN_FILE,
      caFile: e.LVMH_KUBE_CA_FILE,
      namespace: e.LVMH_KUBE_NAMESPACE,
      storageClass: e.LVMH_KUBE_STORAGE_CLASS,
      storageSize: e.LVMH_KUBE_STORAGE_SIZE,
      llmSecret: e.LVMH_KUBE_LLM_SECRET,
      startTimeoutSeconds: e.LVMH_KUBE_START_TIMEOUT,
    }, set)
    : null;
  if (typeof kube === "string") throw new ConfigError(kube);
  const database = databaseSettings(e.LVMH_DATABASE_URL, e.LVMH_DATABASE_CA_FILE);
  const { token, generated } = e.LVMH_TOKEN
    ? { token: e.LVMH_TOKEN, generated: false }
    : tokenFile(e.LVMH_DATA_DIR);
  return {
    token,
    tokenGenerated: generated,
    host: e.LVMH_HOST,
    port: e.LVMH_PORT,
    dataDir: e.LVMH_DATA_DIR,
    dbPath: join(e.LVMH_DATA_DIR, "lvmh.db"),
    dockerSock: e.LVMH_CONTAINER_DOCKER_SOCK,
    gitlabUrl: e.LVMH_GITLAB_URL.replace(/\/+$/, ""),
    workerImage: e.LVMH_WORKER_IMAGE,
    workerBaseImage: e.LVMH_WORKER_BASE_IMAGE,
    workerNetwork: e.LVMH_WORKER_NETWORK,
    retentionDays: e.LVMH_RETENTION_DAYS ?? null,
    workerLimits: {
      memoryBytes: e.LVMH_WORKER_MEMORY ?? null,
      cpus: e.LVMH_WORKER_CPUS ?? null,
      pids: e.LVMH_WORKER_PIDS ?? null,
    },
    workerUrl: e.LVMH_WORKER_URL ?? null,
    modelsJson: e.LVMH_MODELS_JSON ?? null,
    providerKey: e.ZAI_RENAUD_API_KEY ?? null,
    localAsk: e.LVMH_ASK ?? [],
    spawnAsk: e.LVMH_SPAWN_ASK,
    spawnBudget: e.LVMH_SPAWN_BUDGET ?? null,
    localBudget: e.LVMH_BUDGET ?? null,
    dailyBudget: e.LVMH_DAILY_BUDGET ? { ...e.LVMH_DAILY_BUDGET, onReach: "stop" } : null,
    signinLimit: e.LVMH_SIGNIN_LIMIT,
    stallMinutes: e.LVMH_STALL_MINUTES,
    idleStopMinutes: e.LVMH_IDLE_STOP_MINUTES ?? null,
    webhookLeaseSeconds: e.LVMH_WEBHOOK_LEASE_SECONDS,
    hookLeaseSeconds: e.LVMH_HOOK_LEASE_SECONDS,
    gitlabHookSecret: e.LVMH_GITLAB_HOOK_SECRET ?? null,
    spawnBackend: e.LVMH_SPAWN_BACKEND,
    kube,
    // The host name is the Pod's or the container's name in a deployment; the pid tells two daemons of one
    // host apart.
    replicaId: e.LVMH_REPLICA_ID ?? `${Deno.hostname()}-${Deno.pid}`,
    database,
  };
}

/** libpq's `sslmode` values (lib/storage/open.ts gives each its meaning). */
const SSL_MODES = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"];

/** Why `value` cannot be `LVMH_DATABASE_URL`, or null; never quotes the URL, which holds a password. */
function databaseUrlProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "must be a postgres:// or postgresql:// URL";
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
    return "must be a postgres:// or postgresql:// URL";
  }
  if (!url.hostname) return "must name the server (postgres://user:password@host:5432/database)";
  const mode = url.searchParams.get("sslmode");
  if (mode !== null && !SSL_MODES.includes(mode)) return `sslmode must be one of ${SSL_MODES.join(", ")}`;
  const root = url.searchParams.get("sslrootcert");
  if (root !== null && root !== "system") {
    return "give the CA's file as LVMH_DATABASE_CA_FILE, not sslrootcert";
  }
  return null;
}

/** The database settings, the CA file checked: readable, a PEM certificate, with a mode that verifies. */
function databaseSettings(url: string | undefined, caFile: string | undefined): Config["database"] {
  if (!url) {
    if (caFile) throw new ConfigError("LVMH_DATABASE_CA_FILE: set without LVMH_DATABASE_URL");
    return null;
  }
  if (!caFile) return { url, caFile: null };
  const mode = new URL(url).searchParams.get("sslmode");
  if (mode === "disable" || mode === "allow" || mode === "prefer") {
    throw new ConfigError(
      `LVMH_DATABASE_CA_FILE: sslmode=${mode} verifies no certificate (use require, verify-ca or verify-full)`,
    );
  }
  let pem: string;
  try {
    pem = Deno.readTextFileSync(caFile);
  } catch (error) {
    throw new ConfigError(`LVMH_DATABASE_CA_FILE: cannot read ${caFile}: ${(error as Error).message}`);
  }
  if (!pem.includes("-----BEGIN CERTIFICATE-----")) {
    throw new ConfigError(`LVMH_DATABASE_CA_FILE: ${caFile} holds no PEM certificate`);
  }
  return { url, caFile };
}

/** Read the token kept in the data dir, or create it (mode 0600) on first start. */
function tokenFile(dataDir: string): { token: string; generated: boolean } {
  const path = join(dataDir, "token");
  try {
    const token = Deno.readTextFileSync(path).trim();
    if (token.length >= 16) return { token, generated: false };
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) {
      throw new ConfigError(`LVMH_DATA_DIR: cannot read ${path}: ${(error as Error).message}`);
    }
  }
  const token = generateToken();
  Deno.writeTextFileSync(path, token + "\n", { mode: 0o600 });
  return { token, generated: true };
}
