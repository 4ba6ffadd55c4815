#!/usr/bin/env bash
# Build the test base image `lvmh-node-base:latest` with no registry: copy the host's node, npm and git (with
# their shared libraries), a shell and the CA bundle into a rootfs and `docker import` it (~15 s, ~165 MB).
# It stands in for `node:22-bookworm-slim` as the BASE_IMAGE of the worker and daemon images in tests and CI.
#
# Usage: DOCKER_HOST=unix:///tmp/lvmh-docker/docker.sock scripts/mkrootfs.sh [--force] [image]
#   NODE_BIN=/path/to/node picks another Node binary (e.g. .tools/node22 for a Node 22 base).
# Skips the build when the image already exists (unless --force). Safe to run concurrently (flock).
set -euo pipefail

FORCE=0
if [ "${1:-}" = "--force" ]; then FORCE=1; shift; fi
IMAGE=${1:-lvmh-node-base:latest}
export DOCKER_HOST=${DOCKER_HOST:-unix:///tmp/lvmh-docker/docker.sock}
log() { echo "mkrootfs.sh: $*" >&2; }

LOCK=/tmp/lvmh-mkrootfs.lock
exec 9>"$LOCK"
flock 9

if [ "$FORCE" = 0 ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
  log "$IMAGE already present"
  exit 0
fi

R=$(mktemp -d /tmp/lvmh-rootfs.XXXXXX)
trap 'rm -rf "$R"' EXIT
mkdir -p "$R"/{bin,usr/bin,usr/lib,usr/share,etc/ssl/certs,tmp,root,workspace,pi-sessions,dev,proc,sys,home/node}
chmod 1777 "$R/tmp"
NODE_BIN=${NODE_BIN:-/usr/bin/node}
cp -L "$NODE_BIN" "$R/usr/bin/node"
cp -a /usr/bin/git "$R/usr/bin/git"
cp -a /usr/lib/git-core "$R/usr/lib/git-core"       # git-remote-http(s) and friends; -a keeps hardlinks
cp -a /usr/share/git-core "$R/usr/share/git-core"   # templates
BB=${BUSYBOX:-/bin/busybox}
if [ -x "$BB" ] && "$BB" --list >/dev/null 2>&1 && ! ldd "$BB" >/dev/null 2>&1; then
  # busybox-static: every applet (sh, chown, mkdir, cat, ...) as a symlink
  cp "$BB" "$R/bin/busybox"
  for a in $("$BB" --list); do [ -e "$R/bin/$a" ] || ln -s busybox "$R/bin/$a"; done
else
  cp /bin/dash "$R/bin/sh"                           # git needs a POSIX sh for some commands
  for t in cat chown mkdir rm ls stat grep id; do cp -aL "$(command -v $t)" "$R/bin/$t"; done
fi
ln -s ../../bin/sh "$R/usr/bin/sh" 2>/dev/null || true
cp -aL "$(command -v env)" "$R/usr/bin/env"           # npm's and pi's `#!/usr/bin/env node`
# npm, as in node:22-bookworm-slim: the daemon's own Dockerfile installs Deno and its packages with it.
NPM_DIR=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
mkdir -p "$R/usr/lib/node_modules" "$R/usr/local/bin" "$R/usr/local/lib"
cp -a "$NPM_DIR" "$R/usr/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$R/usr/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$R/usr/bin/npx"
cp -aL /etc/ssl/certs/ca-certificates.crt "$R/etc/ssl/certs/"
printf 'root:x:0:0:root:/root:/bin/sh\nnode:x:1000:1000::/home/node:/bin/sh\n' >"$R/etc/passwd"
printf 'root:x:0:\nnode:x:1000:\n' >"$R/etc/group"
printf 'hosts: files dns\n' >"$R/etc/nsswitch.conf"
printf '127.0.0.1 localhost\n::1 localhost\n' >"$R/etc/hosts"
chown 1000:1000 "$R/home/node"
# Shared libraries of every ELF copied (ldd resolves transitive dependencies).
{
  ldd "$NODE_BIN"; ldd /usr/bin/git; ldd /bin/dash
  for f in /usr/lib/git-core/* "$R"/bin/*; do [ -f "$f" ] && ldd "$f" 2>/dev/null || true; done
} | grep -oE '/[^ ]+\.so[^ ]*' | sort -u | while read -r lib; do
  mkdir -p "$R$(dirname "$lib")"; cp -aL "$lib" "$R$lib"
done
# NSS and resolver libraries are dlopen()ed, so ldd does not list them; the rest of glibc (and libgcc_s)
# is what any Debian image has and what the Deno binary links against.
for l in /lib/x86_64-linux-gnu/libnss_files.so.2 /lib/x86_64-linux-gnu/libnss_dns.so.2 \
  /lib/x86_64-linux-gnu/libresolv.so.2 /lib/x86_64-linux-gnu/librt.so.1 /lib/x86_64-linux-gnu/libdl.so.2 \
  /lib/x86_64-linux-gnu/libpthread.so.0 /lib/x86_64-linux-gnu/libm.so.6 /lib/x86_64-linux-gnu/libutil.so.1 \
  /lib/x86_64-linux-gnu/libgcc_s.so.1; do
  if [ -e "$l" ]; then mkdir -p "$R$(dirname "$l")"; cp -aL "$l" "$R$l"; fi
done

tar -C "$R" -c . | docker import \
  -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' -c 'ENV HOME=/root' \
  -c 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
  -c 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
  -c 'LABEL lvmh.test=base' -c 'WORKDIR /workspace' -c 'CMD ["node"]' \
  - "$IMAGE" >/dev/null
log "imported $IMAGE"
