/**
 * A small Kubernetes API client on plain `fetch`: bearer token from a file (re-read every minute, since
 * projected service-account tokens rotate, and at once on a 401), the cluster CA through
 * `Deno.createHttpClient`, JSON bodies, and `Status` answers turned into the kinds of `lib/errors.ts` here and
 * nowhere else. No Kubernetes client library: the daemon needs a dozen calls, not a generated API.
 */
import { ConflictError, InvalidError, NotFoundError, UnavailableError, UpstreamError } from "../errors.ts";

/** Where the API server is and how to prove who we are. */
export interface KubeConnection {
  /** `https://host:port`, no trailing slash. */
  url: string;
  namespace: string;
  /** A file holding the bearer token (re-read as it rotates); null sends none. */
  tokenFile: string | null;
  /** PEM of the CA that signed the API server's certificate; null uses the system store. */
  caFile: string | null;
  /** How long a call without a signal of its own may take, answer included (`CALL_TIMEOUT_MS` by default). */
  callTimeoutMs?: number;
}

/**
 * A call's bound when its caller sets none (a watch sets its own): like the Docker engine's, so a server that
 * takes the connection and never answers cannot hold the start's recovery, and every check behind it, forever.
 */
export const CALL_TIMEOUT_MS = 30_000;

/** The service account's own files inside a Pod. */
export const IN_CLUSTER_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/** How often the token file is read again (projected tokens are refreshed by the kubelet well before expiry). */
const TOKEN_REREAD_MS = 60_000;

/** The fields of a Kubernetes `Status` lvmh reads. */
export interface KubeStatus {
  kind?: string;
  code?: number;
  reason?: string;
  message?: string;
  details?: { causes?: { reason?: string; message?: string; field?: string }[] };
}

/** What a failed call carries besides its domain kind: the HTTP code and the Status reason. */
export interface KubeFailure {
  code: number;
  reason: string;
}

/** A 429 or 5xx: worth another try. */
export class KubeRetryableError extends UpstreamError {
  override name = "KubeRetryableError";
}

/**
 * The domain error for a `Status` answer: 404 NotFound, 409 Conflict, 401 Unavailable (lvmh's credentials),
 * 400/422 Invalid (a body the server refused), 429/5xx retryable, anything else (403: RBAC, PodSecurity,
 * quota) Upstream with the server's message; the error also carries `code` and `reason`.
 */
export function statusError(code: number, status: KubeStatus | null, fallback: string): Error & KubeFailure {
  const causes = status?.details?.causes?.map((c) => `${c.field ?? ""}: ${c.message ?? c.reason ?? ""}`) ??
    [];
  const message = (status?.message || fallback) +
    (causes.length && !status?.message ? ` (${causes.join("; ")})` : "");
  const reason = status?.reason ?? "";
  const error = code === 404
    ? new NotFoundError(message)
    : code === 409
    ? new ConflictError(message)
    : code === 401
    ? new UnavailableError(`Kubernetes refused lvmh's credentials: ${message}`)
    : code === 400 || code === 422
    ? new InvalidError(message)
    : code === 429 || code >= 500
    ? new KubeRetryableError(message)
    : new UpstreamError(message);
  return Object.assign(error, { code, reason });
}

/** The HTTP code of an error `statusError` made, else 0. */
export function codeOf(error: unknown): number {
  return typeof (error as KubeFailure)?.code === "number" ? (error as KubeFailure).code : 0;
}

/** Options of one request. */
export interface RequestOptions {
  query?: Record<string, string | undefined>;
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
}

/** The API server client one backend uses. */
export class KubeClient {
  readonly namespace: string;
  readonly url: string;
  #conn: KubeConnection;
  #http: Deno.HttpClient | undefined;
  #token: string | null = null;
  #tokenReadAt = 0;
  // Cuts every call in flight at `close()`: a daemon that stops does not wait on an API server that hangs.
  #closing = new AbortController();

  constructor(conn: KubeConnection) {
    this.#conn = conn;
    this.url = conn.url.replace(/\/+$/, "");
    this.namespace = conn.namespace;
    if (conn.caFile) {
      // Read at start: a CA that cannot be read is a configuration error the caller reports at once.
      this.#http = Deno.createHttpClient({ caCerts: [Deno.readTextFileSync(conn.caFile)] });
    }
  }

  /** Abort every call in flight and every later one (the daemon stops), and release the TLS client. */
  close(): void {
    this.#closing.abort(new Error("the client is closed"));
    this.#http?.close();
  }

  /** `/api/v1/namespaces/<ns>/<resource>[/<name>[/<sub>]]` for core resources. */
  path(resource: string, name?: string, sub?: string): string {
    const base = `/api/v1/namespaces/${encodeURIComponent(this.namespace)}/${resource}`;
    return name === undefined ? base : `${base}/${encodeURIComponent(name)}${sub ? `/${sub}` : ""}`;
  }

  async #bearer(force: boolean): Promise<string | null> {
    if (!this.#conn.tokenFile) return null;
    if (force || this.#token === null || Date.now() - this.#tokenReadAt > TOKEN_REREAD_MS) {
      try {
        this.#token = (await Deno.readTextFile(this.#conn.tokenFile)).trim();
        this.#tokenReadAt = Date.now();
      } catch (error) {
        throw new UnavailableError(
          `Kubernetes: cannot read the token file ${this.#conn.tokenFile}: ${(error as Error).message}`,
        );
      }
    }
    return this.#token;
  }

  /**
   * One call; the raw response (its body unread). A 401 reads the token file again and tries once more.
   * @throws {UnavailableError} when the API server cannot be reached.
   */
  async raw(method: string, path: string, o: RequestOptions = {}): Promise<Response> {
    const url = new URL(this.url + path);
    const bound = o.signal ?? AbortSignal.timeout(this.#conn.callTimeoutMs ?? CALL_TIMEOUT_MS);
    const signal = AbortSignal.any([bound, this.#closing.signal]);
    for (const [k, v] of Object.entries(o.query ?? {})) if (v !== undefined) url.searchParams.set(k, v);
    for (let attempt = 0;; attempt++) {
      const headers = new Headers({ accept: "application/json" });
      const token = await this.#bearer(attempt > 0);
      if (token) headers.set("authorization", `Bearer ${token}`);
      if (o.body !== undefined) headers.set("content-type", o.contentType ?? "application/json");
      let res: Response;
      try {
        res = await fetch(url, {
          method,
          headers,
          body: o.body === undefined ? undefined : JSON.stringify(o.body),
          signal,
          client: this.#http,
        });
      } catch (error) {
        if (o.signal?.aborted) throw error;
        const why = bound.aborted ? "no answer in time" : (error as Error).message;
        throw new UnavailableError(`Kubernetes API ${this.url} is unreachable: ${why}`);
      }
      if (res.status === 401 && attempt === 0 && this.#conn.tokenFile) {
        await res.body?.cancel();
        continue;
      }
      return res;
    }
  }

  /**
   * One call with a JSON answer.
   * @throws the kinds of `statusError` for a non-2xx answer; {UnavailableError} when unreachable.
   */
  async json<T>(method: string, path: string, o: RequestOptions = {}): Promise<T> {
    const res = await this.raw(method, path, o);
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // A proxy's HTML error page: the code and a short excerpt say enough.
    }
    if (!res.ok) {
      const status = parsed && typeof parsed === "object" ? parsed as KubeStatus : null;
      throw statusError(
        res.status,
        status,
        `Kubernetes ${method} ${path}: HTTP ${res.status} ${text.slice(0, 200)}`,
      );
    }
    return parsed as T;
  }

  /** A core resource's text sub-resource (a Pod's log). @throws like `json`. */
  async text(path: string, query: Record<string, string | undefined>): Promise<string> {
    const res = await this.raw("GET", path, { query });
    const text = await res.text();
    if (!res.ok) {
      let status: KubeStatus | null = null;
      try {
        status = JSON.parse(text);
      } catch { /* not a Status */ }
      throw statusError(res.status, status, `Kubernetes GET ${path}: HTTP ${res.status}`);
    }
    return text;
  }
}

/** In-cluster connection details, when this process runs in a Pod with its service account mounted. */
export function inClusterConnection(
  env: Record<string, string | undefined>,
  dir = IN_CLUSTER_DIR,
): { url: string; tokenFile: string; caFile: string; namespace: string | null } | null {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) return null;
  let namespace: string | null = null;
  try {
    namespace = Deno.readTextFileSync(`${dir}/namespace`).trim() || null;
  } catch {
    // Outside a Pod or with automount off: the configured or default namespace is used.
  }
  return {
    url: `https://${host.includes(":") ? `[${host}]` : host}:${port}`,
    tokenFile: `${dir}/token`,
    caFile: `${dir}/ca.crt`,
    namespace,
  };
}
