/**
 * The Kubernetes settings `lib/config.ts` reads (`LVMH_KUBE_*`), resolved to one connection: the variables
 * when `LVMH_KUBE_URL` is set, else the Pod's own service account (in-cluster), else nothing (an error naming
 * the variable to set).
 */
import { IN_CLUSTER_DIR, inClusterConnection, type KubeConnection } from "./client.ts";

/** The daemon's Kubernetes settings. */
export interface KubeSettings {
  connection: KubeConnection;
  /** null: the cluster's default storage class. */
  storageClass: string | null;
  storageSize: string;
  /** The Secret whose `api-key` is the worker's `ZAI_RENAUD_API_KEY`; null for none. */
  llmSecret: string | null;
  /** How long a worker Pod may stay unscheduled (`LVMH_KUBE_START_TIMEOUT` seconds). */
  startTimeoutMs: number;
}

/** The variables, as validated by the configuration's schema. */
export interface KubeVariables {
  url?: string;
  tokenFile?: string;
  caFile?: string;
  namespace?: string;
  storageClass?: string;
  storageSize: string;
  llmSecret?: string;
  startTimeoutSeconds: number;
}

/**
 * Resolve the connection; files named are checked readable now (a typo stops the start, not the first spawn).
 * @returns the settings, or the one line saying which variable is wrong.
 */
export function resolveKube(
  v: KubeVariables,
  env: Record<string, string | undefined>,
  dir = IN_CLUSTER_DIR,
): KubeSettings | string {
  let connection: KubeConnection;
  if (v.url) {
    connection = {
      url: v.url.replace(/\/+$/, ""),
      namespace: v.namespace ?? "lvmh",
      tokenFile: v.tokenFile ?? null,
      caFile: v.caFile ?? null,
    };
  } else {
    const inside = inClusterConnection(env, dir);
    if (!inside) {
      return "LVMH_KUBE_URL: must be set when LVMH_SPAWN_BACKEND=kubernetes runs outside a cluster";
    }
    connection = {
      url: inside.url,
      namespace: v.namespace ?? inside.namespace ?? "lvmh",
      tokenFile: v.tokenFile ?? inside.tokenFile,
      caFile: v.caFile ?? inside.caFile,
    };
  }
  for (
    const [name, file] of [["LVMH_KUBE_TOKEN_FILE", connection.tokenFile], [
      "LVMH_KUBE_CA_FILE",
      connection.caFile,
    ]]
  ) {
    if (file === null) continue;
    try {
      Deno.readTextFileSync(file);
    } catch (error) {
      return `${name}: cannot read ${JSON.stringify(file)}: ${(error as Error).message}`;
    }
  }
  return {
    connection,
    storageClass: v.storageClass ?? null,
    storageSize: v.storageSize,
    llmSecret: v.llmSecret ?? null,
    startTimeoutMs: v.startTimeoutSeconds * 1000,
  };
}
