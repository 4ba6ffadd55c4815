/**
 * The one way tests, benches and fault scenarios run the real daemon (`main.ts`) as a process:
 * `startDaemon` on a free port with a temporary data dir (optionally under the V8 inspector, for the
 * profiling benches), and `runMainOnce` for the starts that must end with an exit code. Every caller of
 * `startDaemon` must `await daemon.stop()` (or use `await using`).
 */
import { fileURLToPath } from "node:url";
import { freePort } from "./ports.ts";
import { signalChild } from "./proc.ts";
import { v8FlagsArg } from "../lib/v8_flags.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
export const TEST_TOKEN = "test-token-0123456789abcdef";

export interface DaemonOptions {
  /** Reuse a data dir (for restart tests); a fresh temp dir otherwise, removed by `stop()`. */
  dataDir?: string;
  /** Keep this port (for restart tests); a free one otherwise. */
  port?: number;
  env?: Record<string, string>;
  token?: string;
  /** Run under the V8 inspector on a free loopback port (`Daemon.inspectPort`). */
  inspect?: boolean;
  /** `--v8-flags` for the daemon's process besides its own (lib/v8_flags.ts), e.g. `--expose-gc`. */
  v8Flags?: string[];
}

export interface Daemon extends AsyncDisposable {
  port: number;
  token: string;
  dataDir: string;
  /** http://127.0.0.1:PORT */
  url: string;
  /** ws://127.0.0.1:PORT/agent/ws */
  agentUrl: string;
  /** ws://127.0.0.1:PORT/ws?token=… */
  browserUrl: string;
  /** Everything the daemon printed so far (stdout and stderr). */
  output(): string;
  /** fetch a path with the bearer token. */
  api(path: string, init?: RequestInit): Promise<Response>;
  /** Send a signal and wait for exit; returns the exit status. */
  kill(signal?: Deno.Signal): Promise<Deno.CommandStatus>;
  /** Stop the process (SIGTERM, SIGKILL after 5 s) and remove a temp data dir this helper made. */
  stop(): Promise<void>;
}

/** A daemon that `startDaemon` runs as a child process of this one. */
export interface DaemonProcess extends Daemon {
  pid: number;
  /** The inspector's port, when started with `inspect`. */
  inspectPort?: number;
}

export { freePort } from "./ports.ts";

/**
 * The environment every test daemon starts from, in a process or in-process: loopback, its own data dir, and
 * no engine and no GitLab unless a test names its own (nothing listens at either address), so a daemon can
 * neither find the host's containers nor reach gitlab.com by accident.
 */
export function daemonEnv(token: string, port: number, dataDir: string): Record<string, string> {
  return {
    LVMH_TOKEN: token,
    LVMH_HOST: "127.0.0.1",
    LVMH_PORT: String(port),
    LVMH_DATA_DIR: dataDir,
    LVMH_CONTAINER_DOCKER_SOCK: `${dataDir}/no-docker.sock`,
    LVMH_GITLAB_URL: "http://127.0.0.1:9",
  };
}

/**
 * A `fetch` of paths under `url` with the bearer token (JSON content type when there is a body); `send` is
 * how a path is fetched (over the network by default; the in-process daemon passes its handler).
 */
export function bearerFetch(
  url: string,
  token: string,
  send: (path: string, init: RequestInit) => Promise<Response> = (path, init) => fetch(url + path, init),
): Daemon["api"] {
  return (path, init = {}) => {
    const headers = new Headers(init.headers);
    headers.set("authorization", `Bearer ${token}`);
    if (init.body && !headers.has("content-type")) headers.set("content-type", "application/json");
    return send(path, { ...init, headers });
  };
}

/** Start the daemon and resolve once it listens. */
export async function startDaemon(options: DaemonOptions = {}): Promise<DaemonProcess> {
  const ownDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? await Deno.makeTempDir({ prefix: "lvmh-test-" });
  const token = options.token ?? TEST_TOKEN;
  const port = options.port ?? freePort();
  const inspectPort = options.inspect ? freePort() : undefined;
  // LVMH_TEST_STORE=postgres: the daemon on a database of its own, the same one again on a restart.
  const store: Record<string, string> = Deno.env.get("LVMH_TEST_STORE") === "postgres" &&
      !options.env?.LVMH_DATABASE_URL
    ? { LVMH_DATABASE_URL: await (await import("./test_store.ts")).testDatabaseUrl(dataDir) }
    : {};
  const args = ["run", "-A"];
  if (inspectPort !== undefined) args.push(`--inspect=127.0.0.1:${inspectPort}`);
  args.push(v8FlagsArg(options.v8Flags));
  const child = new Deno.Command(Deno.execPath(), {
    args: [...args, "main.ts"],
    cwd: ROOT,
    env: { ...daemonEnv(token, port, dataDir), NO_COLOR: "1", ...store, ...options.env },
    stdout: "piped",
    stderr: "piped",
  }).spawn();

  let log = "";
  let listening: (() => void) | null = null;
  const ready = new Promise<void>((resolve) => listening = resolve);
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      log += decoder.decode(chunk, { stream: true });
      if (log.includes("lvmh listening on")) listening?.();
    }
  };
  const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]);
  let exited = false;
  const status = child.status.then(async (s) => {
    exited = true;
    await pumps;
    return s;
  });

  const deadline = setTimeout(() => listening?.(), 30_000);
  await Promise.race([ready, status]);
  clearTimeout(deadline);
  if (exited || !log.includes("lvmh listening on")) {
    signalChild(child, "SIGKILL");
    await status;
    if (ownDir) await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    throw new Error(`daemon did not start:\n${log}`);
  }

  const url = `http://127.0.0.1:${port}`;
  const kill = async (signal: Deno.Signal = "SIGTERM") => {
    signalChild(child, signal);
    return await status;
  };
  const stop = async () => {
    if (!exited) {
      const timer = setTimeout(() => signalChild(child, "SIGKILL"), 5000);
      await kill("SIGTERM");
      clearTimeout(timer);
    }
    await status;
    if (ownDir) await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  };
  return {
    pid: child.pid,
    port,
    inspectPort,
    token,
    dataDir,
    url,
    agentUrl: `ws://127.0.0.1:${port}/agent/ws`,
    browserUrl: `ws://127.0.0.1:${port}/ws?token=${encodeURIComponent(token)}`,
    output: () => log,
    api: bearerFetch(url, token),
    kill,
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/** What `runMainOnce` saw of a daemon start that ended by itself. */
export interface MainExit {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Run `main.ts` until it exits by itself (a start refused with an exit code: bad configuration, a read-only
 * or locked data dir). `env` comes on top of the caller's environment, port 0 and no colour.
 */
export async function runMainOnce(env: Record<string, string>): Promise<MainExit> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", v8FlagsArg(), "main.ts"],
    cwd: ROOT,
    env: { NO_COLOR: "1", LVMH_PORT: "0", ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

/** Poll `check` until it returns a truthy value or `timeoutMs` passes; no fixed sleeps. */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  what: string,
  timeoutMs = 10_000,
): Promise<NonNullable<Awaited<T>>> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < end) {
    try {
      const value = await check();
      if (value) return value as NonNullable<Awaited<T>>;
    } catch (error) {
      last = error;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last}` : ""}`);
}
