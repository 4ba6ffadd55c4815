/**
 * The V8 flags the daemon runs with: `deno task start`, the Dockerfile's CMD, `deno task dev` and the tests'
 * daemon processes (testing/daemon.ts) all pass `v8FlagsArg()`, and lib/v8_flags_test.ts keeps the two that
 * cannot import it (deno.json, the Dockerfile) in step.
 *
 * `--no-allocation-site-pretenuring`: under ingest, in 4 of 5 runs of the bench V8 began to allocate objects
 * of the ingest path straight in the old generation (most likely the events in flight, which survive a
 * scavenge while their batch waits for its commit), where they died anyway: such a run promoted 125–136 MB
 * instead of 36–45, spent 93–127 ms in GC instead of 39–52, and the daemon's CPU per event was 8 % higher.
 * With the flag every run was of the second kind. The daemon's long-lived state is small, so nothing is lost
 * by always promoting through the young generation. (Set at run time with `v8.setFlagsFromString` it took in
 * 2 runs of 4, hence a command-line flag.)
 */
export const DAEMON_V8_FLAGS = ["--no-allocation-site-pretenuring"] as const;

/** The `deno run` argument that sets them, with any others (e.g. a test's `--expose-gc`). */
export function v8FlagsArg(extra: readonly string[] = []): string {
  return `--v8-flags=${[...DAEMON_V8_FLAGS, ...extra].join(",")}`;
}
