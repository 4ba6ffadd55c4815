/**
 * Several real daemons (`main.ts` processes) on one PostgreSQL database behind testing/balancer.ts, as a
 * deployment runs them behind a TCP proxy: each with its own data dir and port, `LVMH_REPLICA_ID` r0, r1, …,
 * one shared token. A replica can be SIGKILLed and restarted on the same port and data dir, so the balancer
 * sends new connections elsewhere while it is down and to it again once it is back. Every caller must
 * `await replicas.close()` (or use `await using`).
 */
import { type Balancer, startBalancer } from "./balancer.ts";
import { bearerFetch, type Daemon, type DaemonProcess, freePort, startDaemon, TEST_TOKEN } from "./daemon.ts";

export interface ReplicasOptions {
  /** `LVMH_DATABASE_URL` of every replica. */
  databaseUrl: string;
  /** More environment for every replica (on top of the test daemon's). */
  env?: Record<string, string>;
  /** More environment for one replica (`r0`, `r1`, …), on top of `env`: e.g. its own way to a fixture. */
  envOf?: (id: string) => Record<string, string>;
  token?: string;
}

export interface Replica {
  /** `LVMH_REPLICA_ID`: r0, r1, … */
  id: string;
  /** http://127.0.0.1:PORT, this replica directly (not through the balancer). */
  url: string;
  port: number;
  dataDir: string;
  /** The running process (a new one after `restart()`); throws while the replica is down. */
  daemon(): DaemonProcess;
  /** Whether its process runs. */
  running(): boolean;
  /** Send a signal (SIGTERM by default) and wait for the process to exit; SIGKILL really SIGKILLs it. */
  kill(signal?: Deno.Signal): Promise<Deno.CommandStatus>;
  /** Start it again on the same port and data dir (stopping it first if it still runs). */
  restart(): Promise<void>;
}

export interface Replicas extends AsyncDisposable {
  replicas: Replica[];
  balancer: Balancer;
  /** http://127.0.0.1:PORT of the balancer. */
  balancerUrl: string;
  /** ws://…/agent/ws through the balancer: a plugin dialing it lands on any live replica. */
  agentUrl: string;
  /** ws://…/ws?token=… through the balancer. */
  browserUrl: string;
  /** fetch a path through the balancer with the bearer token (fetch's pool may reuse a connection). */
  api: Daemon["api"];
  token: string;
  /** Close the balancer, stop every replica and remove their data dirs. */
  close(): Promise<void>;
}

/** Start `n` daemon processes on `databaseUrl` together (as replicas of a deployment do) and a balancer. */
export async function startReplicas(n: number, options: ReplicasOptions): Promise<Replicas> {
  const token = options.token ?? TEST_TOKEN;
  const made: Replica[] = [];
  const starts: (() => Promise<void>)[] = [];
  const stops: (() => Promise<void>)[] = [];
  const removeDirs = async () => {
    for (const r of made) await Deno.remove(r.dataDir, { recursive: true }).catch(() => {});
  };
  for (let i = 0; i < n; i++) {
    // The data dir is made here, not by startDaemon, so that stopping or killing a process keeps it for the
    // restart; close() removes it.
    const dataDir = await Deno.makeTempDir({ prefix: `lvmh-replica-r${i}-` });
    let port = freePort();
    while (made.some((r) => r.port === port)) port = freePort();
    const id = `r${i}`;
    let current: DaemonProcess | null = null;
    const start = async () => {
      current = await startDaemon({
        dataDir,
        port,
        token,
        env: {
          ...options.env,
          ...options.envOf?.(id),
          LVMH_DATABASE_URL: options.databaseUrl,
          LVMH_REPLICA_ID: id,
        },
      });
    };
    const stop = async () => {
      const daemon = current;
      current = null;
      await daemon?.stop();
    };
    starts.push(start);
    stops.push(stop);
    made.push({
      id,
      url: `http://127.0.0.1:${port}`,
      port,
      dataDir,
      daemon: () => {
        if (!current) throw new Error(`replica ${id} is not running`);
        return current;
      },
      running: () => current !== null,
      kill: async (signal = "SIGTERM") => {
        if (!current) throw new Error(`replica ${id} is not running`);
        const daemon = current;
        current = null;
        return await daemon.kill(signal);
      },
      restart: async () => {
        await stop();
        await start();
      },
    });
  }
  const started = await Promise.allSettled(starts.map((start) => start()));
  const failed = started.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) {
    await Promise.all(stops.map((stop) => stop()));
    await removeDirs();
    throw failed.reason;
  }
  const balancer = await startBalancer(made.map((r) => r.port));
  let closing: Promise<void> | undefined;
  const close = () =>
    closing ??= (async () => {
      await balancer.close();
      await Promise.all(stops.map((stop) => stop()));
      await removeDirs();
    })();
  return {
    replicas: made,
    balancer,
    balancerUrl: balancer.url,
    agentUrl: `ws://127.0.0.1:${balancer.port}/agent/ws`,
    browserUrl: `ws://127.0.0.1:${balancer.port}/ws?token=${encodeURIComponent(token)}`,
    api: bearerFetch(balancer.url, token),
    token,
    close,
    [Symbol.asyncDispose]: close,
  };
}
