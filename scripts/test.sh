#!/usr/bin/env bash
# Run the tests and end with the plain line "N passed, N failed".
#   bash scripts/test.sh          everything (CI and the README): installs what is missing, builds the island
#                                 bundle, starts a throwaway Docker engine, runs the unit set and the root-free
#                                 process tests in parallel and then every other test file one at a time
#   bash scripts/test.sh --unit   the unit set only (`deno task test:unit`): no root, no network, no Docker,
#                                 no browser, no pi; daemons in-process or as plain subprocesses. Installs
#                                 nothing; the island bundle is rebuilt, only when stale, by the tests that
#                                 serve it (ensureBundle, as main.ts does). `deno task ok` adds
#                                 --no-check: its `deno task check` has just type-checked the whole tree
#   bash scripts/test.sh ARGS…    `deno test -A ARGS…` with the full setup (e.g. a file or --filter)
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 PATH="$ROOT/.tools/node_modules/.bin:$PATH"

# The tiers are folders, so a new test file runs in the right phase by where it is put:
#   unit     the `*_test.ts` files beside the code (lib/ ui/ docker/ plugin/ cli/ testing/) and directly in
#            tests/: nothing but Deno, the npm packages and loopback; daemons in-process or plain subprocesses
#   process  tests/process/: root-free too, but slow or load-sensitive for what they add to `deno task ok`,
#            and each needs the daemon as a process of its own (the CLI, a Node process, 10 s; the database
#            locked, an exit code after SQLite's busy timeouts; the event streams under SIGKILL and a stalled
#            reader; the storage contracts and db:copy, each with a PostgreSQL server of its own). They run in
#            the full suite's parallel phase beside the unit set, whose in-process tests
#            cover the same routes (tests/rest_test.ts and tests/roles_test.ts: both streams;
#            lib/store_locked_test.ts: the write gate)
#   e2e      tests/e2e/: needs root, the real pi, Chromium or Docker, or a quiet machine for its bounds; one
#            file at a time, in the full suite only
UNIT=()
for dir in lib ui docker plugin cli testing; do
  [ -d "$dir" ] && UNIT+=("$dir")
done
shopt -s nullglob
UNIT+=(tests/*_test.ts)
PROCESS=(tests/process)
shopt -u nullglob

# Test-only npm packages (playwright-core) must stay out of deno.lock, because Deno installs everything a
# lock lists, `deno task start` included: tests resolve against a throwaway copy of it, which pins the same
# versions and takes the additions.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp deno.lock "$work/test.lock"

passed=0
failed=0
rc=0
# Run `deno test -A "$@"`, show its output, and add its summary line to the totals (no line: 1 failed).
run_deno_test() {
  local log="$work/log" line
  deno test -A --permit-no-files --lock="$work/test.lock" "$@" 2>&1 | tee "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
  line=$(sed -nE 's/^(ok|FAILED) \| ([0-9]+) passed[^|]*\| ([0-9]+) failed.*/\2 \3/p' "$log" | tail -1)
  if [ -z "$line" ]; then
    failed=$((failed + 1))
    rc=1
  else
    passed=$((passed + ${line% *}))
    failed=$((failed + ${line#* }))
  fi
}
finish() {
  echo "$passed passed, $failed failed"
  exit "$rc"
}

if [ "${1:-}" = "--unit" ]; then
  shift
  # Four jobs on two cores: most unit files mostly wait (on plugin timers, reconnects, a poll), their wall time
  # adds up to about 2.5 times their CPU time. Measured on the 2-core reference machine under the same load:
  # 2 jobs 48 s, 4 jobs 32-37 s, 6 jobs no faster and more timing failures.
  DENO_JOBS="${DENO_JOBS:-4}" run_deno_test --parallel "${UNIT[@]}" "$@"
  finish
fi

bash scripts/setup.sh --test || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }
# What the daemon and the tests import, in place before any test runs. By entrypoint and against the test lock:
# a plain `deno install` makes node_modules match deno.lock exactly, which removed playwright-core from under a
# concurrent run's Chromium test or `deno task check` in the same tree.
deno install --quiet --lock="$work/test.lock" --entrypoint main.ts testing/chromium.ts >/dev/null 2>&1 || true
deno task build >&2 || { echo "bundle build failed"; echo "0 passed, 1 failed"; exit 1; }

# A Docker engine of our own unless the caller gave one.
if [ -z "${LVMH_TEST_DOCKER_SOCK:-}" ]; then
  if sock=$(bash scripts/dockerd.sh start); then
    export LVMH_TEST_DOCKER_SOCK="$sock"
    trap 'bash scripts/dockerd.sh stop >/dev/null 2>&1; rm -rf "$work"' EXIT
  else
    echo "warning: could not start dockerd; Docker tests will fail" >&2
  fi
fi

if [ $# -gt 0 ]; then
  run_deno_test "$@"
else
  DENO_JOBS="${DENO_JOBS:-2}" run_deno_test --parallel "${UNIT[@]}" "${PROCESS[@]}"
  # The protocol, REST, roles, approvals, SSE, hooks, webhooks, merge request and restart sets once more with
  # every daemon on PostgreSQL (testing/test_store.ts: a server per file, a database per data dir). 24-28 s on
  # 2 cores.
  ON_POSTGRES=(tests/agent_socket_test.ts tests/browser_socket_test.ts tests/rest_test.ts tests/roles_test.ts
    tests/approvals_daemon_test.ts tests/hooks_inbound_test.ts tests/hooks_spawn_test.ts
    tests/hooks_restart_test.ts tests/webhook_delivery_test.ts tests/webhook_restart_test.ts
    tests/notify_restart_test.ts tests/hooks_kept_answer_test.ts tests/restart_test.ts
    tests/merge_request_follow_test.ts)
  LVMH_TEST_STORE=postgres DENO_JOBS="${DENO_JOBS:-2}" run_deno_test --parallel "${ON_POSTGRES[@]}"
  # Docker, Chromium, root and real pi: one file at a time, so their timeouts hold on a busy machine. The
  # whole tree less the two sets above, so a test file outside the tiers' folders still runs.
  run_deno_test --ignore="$(IFS=,; echo "${UNIT[*]} ${PROCESS[*]}" | tr ' ' ,)" .
fi
finish
