/**
 * Development entry (`deno task dev`): build the island bundle when stale, run `main.ts`, and on every change
 * to what the server or the bundle is made of rebuild what is stale and restart the server. Stops the server
 * on Ctrl+C. What is watched comes from the two import graphs (`main.ts`'s and the bundle's), by top-level
 * folder, so a module in a new place is watched without a list to edit here.
 */
import { fileURLToPath } from "node:url";
import { ensureBundle, moduleGraph } from "./lib/bundle.ts";
import { v8FlagsArg } from "./lib/v8_flags.ts";

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
  server = new Deno.Command(Deno.execPath(), { args: ["run", "-A", v8FlagsArg(), "main.ts"], cwd: root })
    .spawn();
}

/** The top-level files and folders holding a module of the server or of the bundle, plus the stylesheet. */
async function watched(): Promise<string[]> {
  const files = [
    ...await moduleGraph(fileURLToPath(new URL("main.ts", root))),
    ...await moduleGraph(fileURLToPath(new URL("client.tsx", root))),
    "islands/",
    "deno.json",
    "static/style.css",
  ];
  const tops = new Set(files.map((f) => f === "static/style.css" ? f : f.split("/")[0]));
  return [...tops].map((p) => fileURLToPath(new URL(p, root)));
}

Deno.addSignalListener("SIGINT", async () => {
  await stopServer();
  Deno.exit(0);
});

await restart("first start");
let timer: ReturnType<typeof setTimeout> | null = null;
let changed = "";
for await (const event of Deno.watchFs(await watched())) {
  // Editors write in bursts (temp file, rename, chmod): restart once per burst.
  if (event.paths.every((p) => p.endsWith(".tmp") || p.includes("/."))) continue;
  changed = event.paths[0]?.replace(root.pathname, "") ?? "";
  if (timer) clearTimeout(timer);
  timer = setTimeout(() => void restart(`changed ${changed}`), 150);
}
