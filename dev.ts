/**
 * Development entry (`deno task dev`): build the island bundle when stale, run `main.ts`, and on every change
 * under the watched folders rebuild what is stale and restart the server. Stops the server on Ctrl+C.
 */
import { ensureBundle } from "./scripts/build.ts";

const WATCH = ["main.ts", "client.tsx", "lib", "routes", "islands", "components", "static/style.css"];
const root = new URL("./", import.meta.url);

let server: Deno.ChildProcess | null = null;

async function stopServer(): Promise<void> {
  if (!server) return;
  const child = server;
  server = null;
  try {
    child.kill("SIGTERM");
  } catch { /* already exited */ }
  const timer = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
  }, 5000);
  await child.status;
  clearTimeout(timer);
}

async function restart(reason: string): Promise<void> {
  await stopServer();
  try {
    if (await ensureBundle()) console.log("dev: rebuilt static/client.js");
  } catch (error) {
    // Keep serving the last good bundle; the error says what to fix.
    console.error(`dev: ${(error as Error).message}`);
  }
  console.log(`dev: starting main.ts (${reason})`);
  server = new Deno.Command(Deno.execPath(), { args: ["run", "-A", "main.ts"], cwd: root }).spawn();
}

Deno.addSignalListener("SIGINT", async () => {
  await stopServer();
  Deno.exit(0);
});

await restart("first start");
const paths = WATCH.map((p) => new URL(p, root).pathname);
let timer: ReturnType<typeof setTimeout> | null = null;
let changed = "";
for await (const event of Deno.watchFs(paths)) {
  // Editors write in bursts (temp file, rename, chmod): restart once per burst.
  if (event.paths.every((p) => p.endsWith(".tmp") || p.includes("/."))) continue;
  changed = event.paths[0]?.replace(root.pathname, "") ?? "";
  if (timer) clearTimeout(timer);
  timer = setTimeout(() => void restart(`changed ${changed}`), 150);
}
