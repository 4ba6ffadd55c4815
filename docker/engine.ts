/**
 * A Docker Engine API client over its unix socket, shaped like moby's `client/`: one promise-returning
 * function per endpoint, names and ids checked before any request, the API version pinned in the path,
 * errors by kind (`docker/errors.ts`), and an injectable transport so unit tests need no engine.
 */
import { DockerBuildError, DockerNotFoundError, errorFor, unreachable } from "./errors.ts";
import { collectOutput, readBuildStream } from "./stream.ts";

/** The engine API version used in every path; 1.41 is what Debian 12's docker.io (20.10) serves. */
export const API_VERSION = "v1.41";

/** Sends one request to the engine; the default goes over the unix socket. */
export type Transport = (req: Request) => Promise<Response>;

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$/;
const IMAGE_RE = /^[a-z0-9][a-z0-9._\/:@-]{0,254}$/;
const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * The origin of every request to the engine. The engine ignores the host, but Deno resolves it even when the
 * client's proxy is a unix socket: with a name (`http://docker`) every call asked the DNS server first, and a
 * query it dropped held the call for the resolver's 5 s timeout (a daemon's shutdown waited for its start's
 * container list that long). An address is not looked up.
 */
export const ENGINE_ORIGIN = "http://127.0.0.1";

/** `fetch` over a unix socket; requests go to `ENGINE_ORIGIN`, whose host the engine ignores. */
export function unixTransport(socketPath: string): Transport {
  let client: Deno.HttpClient | null = null;
  return (req) => {
    client ??= Deno.createHttpClient({ proxy: { transport: "unix", path: socketPath } });
    return fetch(req, { client });
  };
}

export type Labels = Record<string, string>;

/** The fields of `GET /containers/json` that lvmh reads. */
export interface ContainerSummary {
  Id: string;
  Names: string[];
  Image: string;
  State: string;
  Status: string;
  Labels: Labels;
  Created: number;
}

/** The fields of `GET /containers/{id}/json` that lvmh reads. */
export interface ContainerInfo {
  Id: string;
  Name: string;
  State: { Status: string; Running: boolean; ExitCode: number; OOMKilled?: boolean };
  Config: { Env: string[] | null; Labels: Labels; Image: string; Cmd: string[] | null };
  HostConfig: {
    NetworkMode: string;
    Init: boolean | null;
    Memory?: number;
    NanoCpus?: number;
    PidsLimit?: number | null;
  };
}

/** Options of `imageBuild`; `buildargs` become the Dockerfile's ARGs. */
export interface BuildOptions {
  tag: string;
  dockerfile: string;
  buildargs?: Record<string, string>;
  labels?: Labels;
  /** Network for RUN steps; the legacy builder's RUN has none otherwise. */
  networkmode?: string;
  onLine?: (line: string) => void;
  timeoutMs?: number;
}

/**
 * Build a client for one engine.
 * @param options.socketPath the engine's unix socket; named in every "unreachable" message.
 * @param options.transport replaces the socket transport (unit tests).
 */
export function createEngine(options: { socketPath: string; transport?: Transport }) {
  const { socketPath } = options;
  const transport = options.transport ?? unixTransport(socketPath);
  // Cuts every call in flight at `close()`: a daemon that stops does not wait out a hung engine's timeouts.
  const closing = new AbortController();

  /** Send a request; map "no answer" to DockerUnreachableError and non-2xx to errors by kind. */
  async function call(
    action: string,
    method: string,
    path: string,
    init: { body?: BodyInit; contentType?: string; timeoutMs?: number; ok?: number[] } = {},
  ): Promise<Response> {
    const headers = new Headers();
    if (init.contentType) headers.set("content-type", init.contentType);
    const req = new Request(`${ENGINE_ORIGIN}/${API_VERSION}${path}`, {
      method,
      headers,
      body: init.body,
      signal: AbortSignal.any([AbortSignal.timeout(init.timeoutMs ?? DEFAULT_TIMEOUT_MS), closing.signal]),
    });
    let res: Response;
    try {
      res = await transport(req);
    } catch (error) {
      throw unreachable(action, socketPath, error);
    }
    if ((res.status >= 200 && res.status < 300) || init.ok?.includes(res.status)) return res;
    throw errorFor(action, res.status, await res.text().catch(() => ""));
  }

  async function callJson<T>(...args: Parameters<typeof call>): Promise<T> {
    const res = await call(...args);
    const text = await res.text();
    return (text ? JSON.parse(text) : null) as T;
  }

  async function callVoid(...args: Parameters<typeof call>): Promise<number> {
    const res = await call(...args);
    await res.body?.cancel();
    return res.status;
  }

  /** `GET /images/{name}/json`. @throws {DockerNotFoundError} when absent. */
  async function imageInspect(name: string): Promise<{ Id: string; Config: { Labels: Labels | null } }> {
    checkImage(name);
    return await callJson(`Cannot inspect image "${name}"`, "GET", `/images/${name}/json`);
  }

  const jsonBody = (value: unknown) => ({ body: JSON.stringify(value), contentType: "application/json" });
  const labelFilter = (labels: Labels) =>
    encodeURIComponent(JSON.stringify({ label: Object.entries(labels).map(([k, v]) => `${k}=${v}`) }));

  return {
    socketPath,

    /** Abort every call in flight, and every later one at once (the daemon stops). */
    close(): void {
      closing.abort(new Error("the client is closed"));
    },

    /** `GET /_ping`. @throws {DockerUnreachableError} when the engine does not answer. */
    async ping(timeoutMs = 3000): Promise<void> {
      await callVoid("Cannot ping the Docker engine", "GET", "/_ping", { timeoutMs });
    },

    imageInspect,

    /** True when the image exists locally. */
    async imageExists(name: string): Promise<boolean> {
      try {
        await imageInspect(name);
        return true;
      } catch (error) {
        if (error instanceof DockerNotFoundError) return false;
        throw error;
      }
    },

    /**
     * `POST /build` with a tar context; reads the stream to the end because failures still answer 200.
     * @throws {DockerBuildError} with the engine's message when the stream carries an error.
     */
    async imageBuild(
      context: BodyInit,
      o: BuildOptions,
    ): Promise<{ imageId: string | null; tail: string[] }> {
      checkImage(o.tag);
      const q = new URLSearchParams({ t: o.tag, dockerfile: o.dockerfile, rm: "1", forcerm: "1" });
      if (o.buildargs) q.set("buildargs", JSON.stringify(o.buildargs));
      if (o.labels) q.set("labels", JSON.stringify(o.labels));
      if (o.networkmode) q.set("networkmode", o.networkmode);
      const action = `Cannot build image "${o.tag}"`;
      const res = await call(action, "POST", `/build?${q}`, {
        body: context,
        contentType: "application/x-tar",
        timeoutMs: o.timeoutMs ?? 15 * 60_000,
      });
      const result = await readBuildStream(res.body!, o.onLine);
      if (result.error) throw new DockerBuildError(`${action}: ${result.error}`, 200, result.error);
      return { imageId: result.imageId, tail: result.tail };
    },

    /** `DELETE /images/{name}`. @throws {DockerNotFoundError} when absent. */
    async imageRemove(name: string, force = false): Promise<void> {
      checkImage(name);
      await callVoid(`Cannot remove image "${name}"`, "DELETE", `/images/${name}?force=${force ? 1 : 0}`);
    },

    /** `POST /volumes/create`; idempotent (an existing volume is returned as is). */
    async volumeCreate(name: string, labels: Labels = {}): Promise<void> {
      checkName(name, "volume");
      await callVoid(
        `Cannot create volume "${name}"`,
        "POST",
        "/volumes/create",
        jsonBody({ Name: name, Labels: labels }),
      );
    },

    /** `DELETE /volumes/{name}`. @throws {DockerConflictError} while in use, {DockerNotFoundError} when absent. */
    async volumeRemove(name: string, force = false): Promise<void> {
      checkName(name, "volume");
      await callVoid(`Cannot remove volume "${name}"`, "DELETE", `/volumes/${name}?force=${force ? 1 : 0}`);
    },

    /** `GET /volumes/{name}`: true when the volume exists. */
    async volumeExists(name: string): Promise<boolean> {
      checkName(name, "volume");
      try {
        await callVoid(`Cannot inspect volume "${name}"`, "GET", `/volumes/${name}`);
        return true;
      } catch (error) {
        if (error instanceof DockerNotFoundError) return false;
        throw error;
      }
    },

    /** `GET /volumes` filtered by labels; returns the names. */
    async volumeList(labels: Labels): Promise<string[]> {
      const res = await callJson<{ Volumes: { Name: string }[] | null }>(
        "Cannot list volumes",
        "GET",
        `/volumes?filters=${labelFilter(labels)}`,
      );
      return (res.Volumes ?? []).map((v) => v.Name);
    },

    /** `POST /containers/create`. @throws {DockerNotFoundError} no image, {DockerConflictError} name taken. */
    async containerCreate(name: string, body: Record<string, unknown>): Promise<string> {
      checkName(name, "container");
      const res = await callJson<{ Id: string }>(
        `Cannot create container "${name}"`,
        "POST",
        `/containers/create?name=${name}`,
        jsonBody(body),
      );
      return res.Id;
    },

    /** `POST /containers/{id}/start`; an already running container (304) is fine. */
    async containerStart(id: string): Promise<void> {
      checkName(id, "container");
      await callVoid(`Cannot start container "${id}"`, "POST", `/containers/${id}/start`, { ok: [304] });
    },

    /**
     * `POST /containers/{id}/wait`; register it before `start` with `next-exit` so a fast exit is not missed.
     * @returns the exit code.
     */
    async containerWait(id: string, condition = "not-running", timeoutMs = 10 * 60_000): Promise<number> {
      checkName(id, "container");
      const res = await callJson<{ StatusCode: number; Error: { Message: string } | null }>(
        `Cannot wait for container "${id}"`,
        "POST",
        `/containers/${id}/wait?condition=${encodeURIComponent(condition)}`,
        { timeoutMs },
      );
      return res.StatusCode;
    },

    /**
     * `GET /containers/{id}/logs`, demultiplexed (containers are created without a TTY).
     * @param tail only the last `tail` lines of each stream (all when absent).
     */
    async containerLogs(id: string, tail?: number): Promise<{ stdout: string; stderr: string }> {
      checkName(id, "container");
      const last = tail === undefined ? "" : `&tail=${Math.max(0, Math.floor(tail))}`;
      const res = await call(
        `Cannot read logs of container "${id}"`,
        "GET",
        `/containers/${id}/logs?stdout=1&stderr=1${last}`,
      );
      return await collectOutput(res.body!);
    },

    /** `POST /containers/{id}/stop`; a stopped container (304) is fine. */
    async containerStop(id: string, seconds = 10): Promise<void> {
      checkName(id, "container");
      await callVoid(`Cannot stop container "${id}"`, "POST", `/containers/${id}/stop?t=${seconds}`, {
        ok: [304],
        timeoutMs: (seconds + 30) * 1000,
      });
    },

    /** `DELETE /containers/{id}`. @throws {DockerNotFoundError} when absent. */
    async containerRemove(id: string, force = true): Promise<void> {
      checkName(id, "container");
      await callVoid(
        `Cannot remove container "${id}"`,
        "DELETE",
        `/containers/${id}?force=${force ? 1 : 0}&v=1`,
      );
    },

    /** `GET /containers/{id}/json`. @throws {DockerNotFoundError} when absent. */
    async containerInspect(id: string): Promise<ContainerInfo> {
      checkName(id, "container");
      return await callJson(`Cannot inspect container "${id}"`, "GET", `/containers/${id}/json`);
    },

    /** `GET /containers/json?all=1` filtered by labels (`key=value`). */
    containerList(labels: Labels): Promise<ContainerSummary[]> {
      return callJson(
        "Cannot list containers",
        "GET",
        `/containers/json?all=1&filters=${labelFilter(labels)}`,
      );
    },

    /** `PUT /containers/{id}/archive`: extract a tar into a (created or running) container's filesystem. */
    async containerPutArchive(id: string, dir: string, tar: Uint8Array): Promise<void> {
      checkName(id, "container");
      if (!dir.startsWith("/")) throw new TypeError(`archive path must be absolute: ${JSON.stringify(dir)}`);
      await callVoid(
        `Cannot copy into container "${id}"`,
        "PUT",
        `/containers/${id}/archive?path=${encodeURIComponent(dir)}`,
        { body: tar as Uint8Array<ArrayBuffer>, contentType: "application/x-tar" },
      );
    },
  };
}

/** The client `createEngine` returns. */
export type Engine = ReturnType<typeof createEngine>;

/**
 * Refuse a container, volume or network name the engine's path could misread.
 * @throws {TypeError} naming `what` when `name` is not one.
 */
export function checkName(name: string, what: string): void {
  if (!NAME_RE.test(name)) throw new TypeError(`invalid ${what} name or id: ${JSON.stringify(name)}`);
}

function checkImage(name: string): void {
  if (!IMAGE_RE.test(name) || name.includes("..")) {
    throw new TypeError(`invalid image name: ${JSON.stringify(name)}`);
  }
}
