/**
 * Production entry: read the configuration, open the store, build the route table, serve.
 * Exit codes: 0 after a clean shutdown (SIGTERM/SIGINT), 2 on invalid configuration or a database that cannot
 * be used at start.
 */
import { ConfigError, loadConfig } from "./lib/config.ts";
import { createDaemon } from "./lib/daemon.ts";
import { routes } from "./routes/_table.ts";
import { ensureBundle } from "./lib/bundle.ts";
import { DatabaseUnavailable, openDatabase } from "./lib/storage/open.ts";

async function start() {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(`lvmh: invalid configuration: ${error.message}`);
    Deno.exit(2);
  }
  let database = null;
  if (config.database) {
    try {
      database = await openDatabase(config.database);
    } catch (error) {
      if (!(error instanceof DatabaseUnavailable)) throw error;
      console.error(`lvmh: ${error.message}`);
      Deno.exit(2);
    }
  }
  try {
    if (await ensureBundle()) console.log("lvmh: built the UI bundle (static/client.js)");
  } catch (error) {
    // The API and the sockets work without it; only the pages would stay static.
    console.error(
      `lvmh: cannot build the UI bundle, pages will not be interactive: ${(error as Error).message}`,
    );
  }
  let daemon;
  try {
    daemon = createDaemon(config, routes, { database });
  } catch (error) {
    // A data dir we cannot write (read-only, full, locked) is the operator's to fix: one line, exit 2.
    console.error(`lvmh: cannot open the database in ${config.dataDir}: ${(error as Error).message}`);
    Deno.exit(2);
  }
  try {
    // With a shared database: the replica's heartbeat written and its copy following the log.
    await daemon.ready;
  } catch (error) {
    console.error(`lvmh: cannot start on the shared database: ${(error as Error).message}`);
    Deno.exit(2);
  }
  // Handlers go in before the socket opens: a signal that arrives once clients can see us must find them,
  // not the default action that ends the process mid-write.
  let server: Deno.HttpServer | null = null;
  const stop = async () => {
    await daemon.shutdown();
    if (server) await Promise.race([server.shutdown(), new Promise((r) => setTimeout(r, 2000))]);
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGTERM", stop);
  Deno.addSignalListener("SIGINT", stop);
  server = Deno.serve({
    hostname: config.host,
    port: config.port,
    onListen({ hostname, port }) {
      const url = `http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}`;
      const lines = [`lvmh listening on ${url}`];
      if (config.tokenGenerated) {
        // Shown once, on the start that created it; later starts read it from the data dir silently.
        lines.push(`lvmh: generated an access token (kept in ${config.dataDir}/token): ${config.token}`);
      }
      // One write, so whoever waits for "listening" has the token line too.
      console.log(lines.join("\n"));
    },
  }, daemon.handler);
}

if (import.meta.main) await start();
