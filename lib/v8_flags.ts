/**
 * The V8 flags the daemon runs with: `deno task start`, the Dockerfile's CMD, `deno task dev` and the tests'
 * daemon processes (testing/daemon.ts) all pass `DAEMON_V8_FLAGS_ARG`, and lib/v8_flags_test.ts keeps the two
 * that cannot import it (deno.json, the Dockerfile) in step.
 *
 * `--no-allocation-site-pretenuring`: under ingest, V8 saw the events in flight (a batch waits for its commit
 * a few milliseconds) survive scavenges and began allocating their allocation sites' objects in the old
 * generation, where they died anyway. In 4 of 5 runs of the ingest bench that made GC 100–127 ms instead of
 * 44–48 ms (125–130 MB promoted instead of 36–43), and the daemon's CPU per event 8 % higher; without it every
 * run was of the second kind. The daemon's long-lived state is small, so nothing is lost by always promoting
 * through the young generation.
 */
export const DAEMON_V8_FLAGS = ["--no-allocation-site-pretenuring"] as const;

/** The `deno run` argument that sets them, with any others (e.g. a test's `--expose-gc`). */
export function v8FlagsArg(extra: readonly string[] = []): string {
  return `--v8-flags=${[...DAEMON_V8_FLAGS, ...extra].join(",")}`;
}
