#!/usr/bin/env bash
# Run every test on this machine: installs what is missing, starts a throwaway Docker engine, runs
# `deno test`, stops the engine, and ends with the plain line "N passed, N failed".
# Extra arguments go to `deno test` (e.g. a file or --filter).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 PATH="$ROOT/.tools/node_modules/.bin:$PATH"

bash scripts/setup.sh --test || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }
deno install --quiet >/dev/null 2>&1 || true
deno task build >&2 || { echo "bundle build failed"; echo "0 passed, 1 failed"; exit 1; }

# A Docker engine of our own unless the caller gave one.
if [ -z "${LVMH_TEST_DOCKER_SOCK:-}" ]; then
  if sock=$(bash scripts/dockerd.sh start); then
    export LVMH_TEST_DOCKER_SOCK="$sock"
    trap 'bash scripts/dockerd.sh stop >/dev/null 2>&1' EXIT
  else
    echo "warning: could not start dockerd; Docker tests will fail" >&2
  fi
fi

log=$(mktemp)
deno test -A "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
summary=$(sed -nE 's/^(ok|FAILED) \| ([0-9]+) passed[^|]*\| ([0-9]+) failed.*/\2 passed, \3 failed/p' "$log" | tail -1)
rm -f "$log"
if [ -z "$summary" ]; then summary="0 passed, 1 failed"; rc=1; fi
echo "$summary"
exit "$rc"
