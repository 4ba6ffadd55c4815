/**
 * Test helper: the daemon built in this process with `createDaemon`, wired the way `main.ts` wires it, on a
 * temporary data dir. REST requests go straight to `daemon.handler(req, info)`, with no socket in between;
 * the same handler is also served on a free loopback port for the WebSocket routes. No subprocess, no root,
 * no Docker (the engine socket points at a path that does not exist, so spawn routes answer 503).
 * With `LVMH_TEST_STORE=postgres` the daemon runs on a PostgreSQL database of its own (testing/test_store.ts),
 * as a replica does with `LVMH_DATABASE_URL`: the same tests prove both stores.
 * Every test that starts one must `await daemon.stop()` (or use `await using`).
 */
import { createDaemon, type Daemon as LibDaemon } from "../lib/daemon.ts";
import { loadConfig } from "../lib/config.ts";
import { openDatabase } from "../lib/storage/open.ts";
import { routes } from "../routes/_table.ts";
import { bearerFetch, type Daemon, daemonEnv, TEST_TOKEN } from "./daemon.ts";
import { TEST_STORE_POSTGRES, testDatabaseUrl } from "./test_store.ts";

export interface InProcessOptions {
  /** Reuse a data dir (for restart tests); a fresh temp dir otherwise, removed by `stop()`. */
  dataDir?: string;
  /** Extra `LVMH_*` variables, read by the real `loadConfig`. */
  env?: Record<string, string>;
  token?: string;
  /** Listen on this port (a plugin started before the daemon knows where to reconnect); a free one otherwise. */
  port?: number;
}

/** What the tests see: the subprocess helper's `Daemon` (but `kill`), plus the daemon's parts. */
export interface InProcessDaemon extends Omit<Daemon, "kill"> {
  /** The assembled daemon; `daemon.app` for the few tests that need internals. */
  daemon: LibDaemon;
  /** Send a request for `path` straight to the handler (origin `url`), credentials only from `init`. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
}

/** The peer a request sent straight to the handler claims to come from. */
const LOOPBACK: Deno.ServeHandlerInfo = {
  remoteAddr: { transport: "tcp", hostname: "127.0.0.1", port: 0 },
  completed: Promise.resolve(),
};

/** Build a daemon in-process on a free port and a temp data dir (or `options.dataDir`). */
export async function startInProcess(options: InProcessOptions = {}): Promise<InProcessDaemon> {
  const ownDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? await Deno.makeTempDir({ prefix: "lvmh-inproc-" });
  const token = options.token ?? TEST_TOKEN;
  const log = captureConsole();
  let daemon: LibDaemon | null = null;
  /** The daemon once it is ready: main.ts does not listen before. */
  let serving: LibDaemon | null = null;
  // Listen first, so the config carries the real port (the spawner derives the worker URL from it).
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: options.port ?? 0, onListen() {} },
    (req, info) => serving ? serving.handler(req, info) : new Response("starting", { status: 503 }),
  );
  const port = server.addr.port;
  try {
    // A restart on the same data dir finds the same database, as a replica restarted on its volume would.
    const store = TEST_STORE_POSTGRES && !options.env?.LVMH_DATABASE_URL
      ? { LVMH_DATABASE_URL: await testDatabaseUrl(dataDir) }
      : {};
    const config = loadConfig({ ...daemonEnv(token, port, dataDir), ...store, ...options.env });
    // What main.ts does: the shared database opened first, the daemon serving once it is ready.
    const database = config.database ? await openDatabase(config.database) : null;
    try {
      daemon = createDaemon(config, routes, { database });
    } catch (error) {
      await database?.close();
      throw error;
    }
    try {
      await daemon.ready;
    } catch (error) {
      await daemon.shutdown();
      throw error;
    }
  } catch (error) {
    await server.shutdown();
    log.stop();
    if (ownDir) await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    throw error;
  }
  const lib = daemon;
  serving = lib;

  const url = `http://127.0.0.1:${port}`;
  const send = (path: string, init: RequestInit = {}) => lib.handler(new Request(url + path, init), LOOPBACK);
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    try {
      // What main.ts does on SIGTERM: sockets get 1001 first, so the server has no connection left to wait on.
      await lib.shutdown();
      await server.shutdown();
    } finally {
      log.stop();
      if (ownDir) await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  };
  return {
    daemon: lib,
    port,
    token,
    dataDir,
    url,
    agentUrl: `ws://127.0.0.1:${port}/agent/ws`,
    browserUrl: `ws://127.0.0.1:${port}/ws?token=${encodeURIComponent(token)}`,
    output: () => log.text(),
    fetch: send,
    api: bearerFetch(url, token, send),
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

const METHODS = ["log", "info", "warn", "error", "debug"] as const;
const ECHO = Deno.env.get("LVMH_TEST_ECHO") === "1";
/** Recorders of the daemons alive in this process; the console is patched while there is at least one. */
const recorders = new Set<string[]>();
type Log = (...args: unknown[]) => void;
let original: Record<(typeof METHODS)[number], Log> | null = null;

/**
 * Record console output while the daemon lives instead of printing it: in production it is the process's
 * output, and tests assert on it (the token is never printed, the retention notice is). Like the subprocess
 * helper's pipes, nothing is echoed (expected warnings such as "Docker unreachable" would bury the report);
 * with LVMH_TEST_ECHO=1 every line also reaches the real console.
 */
function captureConsole() {
  const lines: string[] = [];
  if (!original) {
    const saved = Object.fromEntries(METHODS.map((m) => [m, console[m] as Log])) as Record<
      (typeof METHODS)[number],
      Log
    >;
    original = saved;
    for (const m of METHODS) {
      console[m] = (...args: unknown[]) => {
        const line = args.map((a) => typeof a === "string" ? a : Deno.inspect(a)).join(" ");
        for (const r of recorders) r.push(line);
        if (ECHO) saved[m](...args);
      };
    }
  }
  recorders.add(lines);
  return {
    text: () => lines.join("\n"),
    stop() {
      recorders.delete(lines);
      if (recorders.size === 0 && original) {
        Object.assign(console, original);
        original = null;
      }
    },
  };
}
