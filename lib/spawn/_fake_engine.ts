/**
 * Test helper: an in-memory Docker engine behind `createEngine`'s injectable transport, enough for the spawn
 * pipeline (images, volumes, containers, fetch and copy helpers, archives, label filters). The real client
 * encodes every request and parses every answer, so the backend under test runs its production code paths.
 * Knobs let a test fail a start, hold a build or a clone, or fail git. Not for production.
 */
import { createEngine, type Engine, type Labels, type Transport } from "../../docker/engine.ts";

/** One container the fake engine holds. */
export interface FakeContainer {
  id: string;
  name: string;
  labels: Labels;
  state: "created" | "running" | "exited";
  /** Seconds since the epoch, as the engine reports it. */
  created: number;
  body: Record<string, unknown>;
  /** Volumes mounted, by name. */
  volumes: string[];
  /** How a worker ended, once a test makes it exit (`exit`). */
  exitCode?: number;
  oom?: boolean;
}

/** A resolvable promise, for holding a fake step until the test lets it go. */
export function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => resolve = r);
  return { promise, resolve };
}

/** The fake engine, its state and its knobs. */
export class FakeEngine {
  images = new Map<string, Labels | null>();
  volumes = new Map<string, Labels>();
  containers = new Map<string, FakeContainer>();
  /** Every request as `METHOD /path` (without the API version), in order. */
  log: string[] = [];
  /** Statuses the next `start` calls of worker containers answer with, first one first. */
  startFailures: number[] = [];
  /** Awaited by every build before it tags the image. */
  holdBuild: Promise<void> = Promise.resolve();
  /** Awaited by each clone helper (with its volume) before it exits. */
  onClone: (volume: string) => Promise<void> = () => Promise.resolve();
  /** Exit code and stderr of fetch helpers (and copy helpers, which run after a fetch). */
  cloneResult = { code: 0, stderr: "" };
  /** The head sha of every branch in every cache, as a copy helper reports it. */
  headSha = "1".repeat(40);
  /** Work volumes a copy helper filled (a later copy with a known base keeps them). */
  filled = new Set<string>();
  /** What each copy helper was asked, in order: base branch ("" = default), base sha ("" = head), branch. */
  copies: { volume: string; base: string; sha: string; branch: string }[] = [];
  /** When true, every request fails as if the socket were gone. */
  down = false;
  builds = 0;
  #seq = 0;

  /** The engine's API as a request handler, to serve on a unix socket for a daemon in another process. */
  readonly handle: Transport = (req) => this.#transport(req);

  /** A client on this fake, as the spawner would use one. */
  engine(): Engine {
    return createEngine({ socketPath: "/fake/docker.sock", transport: this.#transport });
  }

  /** Put a container in place as if an earlier daemon had made it. */
  addContainer(c: Omit<FakeContainer, "id" | "body" | "volumes"> & { id?: string }): FakeContainer {
    const full = { id: c.id ?? this.#id(), body: {}, volumes: [], ...c };
    this.containers.set(full.id, full);
    return full;
  }

  /** End a running container as if its process exited by itself (a crash, an OOM kill). */
  exit(id: string, exitCode: number, oom = false): void {
    const c = this.containers.get(id)!;
    Object.assign(c, { state: "exited", exitCode, oom });
  }

  /** Containers whose labels include all of `labels`. */
  find(labels: Labels): FakeContainer[] {
    return [...this.containers.values()].filter((c) => matches(c.labels, labels));
  }

  #id(): string {
    return `c${++this.#seq}`.padEnd(12, "0");
  }

  #transport: Transport = async (req) => {
    if (this.down) throw new TypeError("client error (Connect): No such file or directory");
    const url = new URL(req.url);
    const path = url.pathname.replace(/^\/v[\d.]+/, "");
    this.log.push(`${req.method} ${path}`);
    const body = req.method === "POST" && req.headers.get("content-type") === "application/json"
      ? await req.json()
      : null;
    return await this.#answer(req, url, path, body);
  };

  async #answer(
    req: Request,
    url: URL,
    path: string,
    body: Record<string, unknown> | null,
  ): Promise<Response> {
    const q = url.searchParams;
    let m: RegExpMatchArray | null;
    if (path === "/_ping") return new Response("OK");
    if ((m = path.match(/^\/images\/(.+)\/json$/))) {
      if (!this.images.has(m[1])) return notFound(`No such image: ${m[1]}`);
      return Response.json({ Id: `sha256:${m[1]}`, Config: { Labels: this.images.get(m[1]) } });
    }
    if (path === "/build") {
      this.builds++;
      await req.body?.cancel();
      await this.holdBuild;
      this.images.set(q.get("t")!, JSON.parse(q.get("labels") ?? "null"));
      return new Response('{"aux":{"ID":"sha256:built"}}\n{"stream":"Successfully built"}\n');
    }
    if (path === "/volumes/create") {
      this.volumes.set(body!.Name as string, body!.Labels as Labels);
      return Response.json({ Name: body!.Name }, { status: 201 });
    }
    if ((m = path.match(/^\/volumes\/([^/?]+)$/)) && req.method === "GET") {
      if (!this.volumes.has(m[1])) return notFound(`get ${m[1]}: no such volume`);
      return Response.json({ Name: m[1], Labels: this.volumes.get(m[1]) });
    }
    if ((m = path.match(/^\/volumes\/([^/?]+)$/)) && req.method === "DELETE") {
      if (!this.volumes.delete(m[1])) return notFound(`get ${m[1]}: no such volume`);
      this.filled.delete(m[1]);
      return new Response(null, { status: 204 });
    }
    if (path === "/containers/create") return this.#create(q.get("name")!, body!);
    if (path === "/containers/json") {
      const wanted = Object.fromEntries(
        (JSON.parse(q.get("filters")!).label as string[]).map((kv) => kv.split("=") as [string, string]),
      );
      return Response.json(
        this.find(wanted).map((c) => ({
          Id: c.id,
          Names: [`/${c.name}`],
          Image: "",
          State: c.state,
          Status: "",
          Labels: c.labels,
          Created: c.created,
        })),
      );
    }
    if ((m = path.match(/^\/containers\/([^/]+)(\/[a-z]+)?$/))) {
      const c = this.containers.get(m[1]);
      if (!c) return notFound(`No such container: ${m[1]}`);
      return await this.#container(req.method, m[2] ?? "", c);
    }
    return Response.json({ message: `fake engine: no route ${req.method} ${path}` }, { status: 500 });
  }

  #create(name: string, body: Record<string, unknown>): Response {
    if (!this.images.has(body.Image as string)) return notFound(`No such image: ${body.Image}`);
    if ([...this.containers.values()].some((c) => c.name === name)) {
      return Response.json({ message: `Conflict. The container name "/${name}" is already in use` }, {
        status: 409,
      });
    }
    const mounts = (body.HostConfig as { Mounts?: { Type: string; Source: string }[] }).Mounts ?? [];
    const c: FakeContainer = {
      id: this.#id(),
      name,
      labels: (body.Labels ?? {}) as Labels,
      state: "created",
      created: Math.floor(Date.now() / 1000),
      body,
      volumes: mounts.filter((x) => x.Type === "volume").map((x) => x.Source),
    };
    this.containers.set(c.id, c);
    return Response.json({ Id: c.id, Warnings: [] }, { status: 201 });
  }

  /** What a helper prints: a copy helper its base (or that it kept the copy), a fetch helper its action. */
  #stdout(c: FakeContainer): string {
    if (c.labels["lvmh.kind"] !== "copy") return "lvmh: cloning\n";
    const [, , , , base, sha, branch] = c.body.Cmd as string[];
    const volume = c.volumes[1];
    this.copies.push({ volume, base, sha, branch });
    if (sha && this.filled.has(volume)) return "lvmh: kept\n";
    this.filled.add(volume);
    return `lvmh: base ${base || DEFAULT_BRANCH} ${sha || this.headSha}\n`;
  }

  async #container(method: string, action: string, c: FakeContainer): Promise<Response> {
    if (method === "POST" && action === "/start") {
      const failure = c.labels["lvmh.kind"] === "worker" ? this.startFailures.shift() : undefined;
      if (failure) {
        return Response.json({ message: "OCI runtime create failed: can't get final child's PID" }, {
          status: failure,
        });
      }
      c.state = "running";
      return new Response(null, { status: 204 });
    }
    if (method === "POST" && action === "/wait") {
      if (c.labels["lvmh.kind"] === "clone") await this.onClone(c.volumes[0]);
      c.state = "exited";
      return Response.json({ StatusCode: this.cloneResult.code, Error: null });
    }
    if (method === "GET" && action === "/json") {
      return Response.json({
        Id: c.id,
        Name: `/${c.name}`,
        State: {
          Status: c.state,
          Running: c.state === "running",
          ExitCode: c.exitCode ?? 0,
          OOMKilled: c.oom ?? false,
        },
        Config: { Env: null, Labels: c.labels, Image: "", Cmd: null },
        HostConfig: { NetworkMode: "host", Init: true },
      });
    }
    if (method === "GET" && action === "/logs" && c.labels["lvmh.kind"] === "worker") {
      return new Response(
        concat(frame(2, `lvmh-bridge: session ${c.labels["lvmh.session"]} ready\n`), frame(1, "")),
      );
    }
    if (method === "GET" && action === "/logs") {
      return new Response(concat(frame(1, this.#stdout(c)), frame(2, this.cloneResult.stderr)));
    }
    if (method === "POST" && action === "/stop") {
      c.state = "exited";
      return new Response(null, { status: 204 });
    }
    if (method === "PUT" && action === "/archive") return new Response(null, { status: 200 });
    if (method === "DELETE" && action === "") {
      this.containers.delete(c.id);
      return new Response(null, { status: 204 });
    }
    return Response.json({ message: `fake engine: no action ${method} ${action}` }, { status: 500 });
  }
}

/** The default branch of every repository of the fake. */
const DEFAULT_BRANCH = "main";

function matches(have: Labels, want: Labels): boolean {
  return Object.entries(want).every(([k, v]) => have[k] === v);
}

function notFound(message: string): Response {
  return Response.json({ message }, { status: 404 });
}

/** One frame of the engine's multiplexed output format. */
function frame(stream: 1 | 2, text: string): Uint8Array {
  const data = new TextEncoder().encode(text);
  const out = new Uint8Array(8 + data.length);
  out[0] = stream;
  new DataView(out.buffer).setUint32(4, data.length);
  out.set(data, 8);
  return out;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
