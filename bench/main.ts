/**
 * `deno task bench`: run every benchmark in its own process, one after another (they share 2 cores), and
 * print their figures. Each prints its own reference and goal beside its result.
 */
const BENCHES = [
  "daemon.ts",
  "scale.ts",
  "fanout.ts",
  "latency.ts",
  "plugin.ts",
  "render.ts",
  "render_list.ts",
  "ui_history.ts",
  "approvals.ts",
  "hooks.ts",
  "spawn.ts",
  "kube_spawn.ts",
  "merge_request.ts",
  "resume.ts",
  "changes.ts",
  "search.ts",
  "pg_ingest.ts",
  "command_latency.ts",
  "replica_fanout.ts",
  "live_channel.ts",
  "replicas_ingest.ts",
  "replicas_fanout.ts",
  "replicas_commands.ts",
  "usage.ts",
];

let failed = 0;
for (const name of BENCHES) {
  const path = new URL(name, import.meta.url);
  try {
    await Deno.stat(path);
  } catch {
    continue;
  }
  console.log(`\n== bench/${name}`);
  const { code } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", path.pathname],
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (code !== 0) {
    failed++;
    console.log(`bench/${name} exited with ${code}`);
  }
}
Deno.exit(failed ? 1 : 0);
