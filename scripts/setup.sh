#!/usr/bin/env bash
# Install everything lvmh needs on a fresh Debian machine with Node and npm, from the npm registry and
# Debian's packages only. Idempotent and quick when everything is already there.
#   scripts/setup.sh          what the daemon needs (Deno under .tools/)
#   scripts/setup.sh --test   also what the tests need (git, Chromium, Docker engine, busybox, pi 0.73.1 and 1.6.0)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DENO_VERSION=2.9.6
log() { echo "setup: $*" >&2; }

# Deno from npm, outside any project package.json (a project-level node_modules/.bin/deno breaks `deno task`).
DENO="$ROOT/.tools/node_modules/.bin/deno"
if [ ! -x "$DENO" ] || ! "$DENO" --version 2>/dev/null | grep -q "^deno $DENO_VERSION "; then
  log "installing deno $DENO_VERSION into .tools/"
  npm install --prefix "$ROOT/.tools" --no-audit --no-fund --loglevel=error "deno@$DENO_VERSION" >&2
fi

if [ "${1:-}" = "--test" ]; then
  missing=()
  command -v git >/dev/null || missing+=(git)
  command -v curl >/dev/null || missing+=(curl)
  [ -x /usr/bin/chromium ] || missing+=(chromium)
  command -v dockerd >/dev/null || missing+=(docker.io)
  [ -x /bin/busybox ] || missing+=(busybox-static)
  # PostgreSQL's initdb and server for the Postgres store's tests (testing/postgres.ts starts its own).
  compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || command -v initdb >/dev/null || missing+=(postgresql)
  if [ ${#missing[@]} -gt 0 ]; then
    log "apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  fi
  bash "$ROOT/scripts/setup_pi.sh" >&2
fi
