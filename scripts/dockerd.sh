#!/usr/bin/env bash
# A throwaway Docker engine for tests, with its own socket, data-root, exec-root and pidfile, so it never
# touches /var/run/docker.sock or a system daemon. No bridge and no iptables: lvmh's containers use host
# networking (a test engine here has no bridge network), and the VM's netfilter stays untouched.
#
# Usage: scripts/dockerd.sh install|start|restart|stop|status|env     (env: LVMH_DOCKERD_DIR, default /tmp/lvmh-docker)
#   install  apt-get install docker.io when dockerd is missing
#   start    install if needed, start dockerd unless it already answers, build the test base image
#            (scripts/mkrootfs.sh); prints the socket path as the only line on stdout
#   restart  stop dockerd as a host shutdown does and start it again on the same data (a test of engine restarts)
#   stop     remove every container, stop dockerd, unmount what it left, delete the directory; when several
#            callers ran `start` on one engine, only the last `stop` does that (`stop --force`: always)
#   env      prints LVMH_TEST_DOCKER_SOCK=<socket> (for `eval "export $(scripts/dockerd.sh env)"`)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR=${LVMH_DOCKERD_DIR:-/tmp/lvmh-docker}
SOCK=$DIR/docker.sock
PIDFILE=$DIR/dockerd.pid
log() { echo "dockerd.sh: $*" >&2; }

ping_engine() {
  [ -S "$SOCK" ] || return 1
  if command -v curl >/dev/null; then
    curl -sf --max-time 2 --unix-socket "$SOCK" http://d/_ping >/dev/null 2>&1
  else
    docker -H "unix://$SOCK" version >/dev/null 2>&1
  fi
}

install_engine() {
  local want=()
  command -v dockerd >/dev/null && command -v docker >/dev/null || want+=(docker.io)
  # busybox-static gives the test base image a full set of applets; mkrootfs.sh falls back to dash without it.
  [ -x /bin/busybox ] || want+=(busybox-static)
  [ ${#want[@]} -gt 0 ] || return 0
  log "installing ${want[*]} from Debian"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # docker.io hard-depends on containerd, runc, tini (HostConfig.Init) and iptables.
  apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
}

start_engine() {
  install_engine
  mkdir -p "$DIR"
  if ping_engine; then
    log "dockerd already answers on $SOCK"
  else
    launch_dockerd
  fi
  DOCKER_HOST="unix://$SOCK" "$ROOT/scripts/mkrootfs.sh" >&2
  users +1 >/dev/null
  echo "$SOCK"
}

launch_dockerd() {
  # cgroups are mounted by the VM's init; only mount them if that did not happen.
  if [ ! -d /sys/fs/cgroup/memory ] && [ ! -f /sys/fs/cgroup/cgroup.controllers ]; then
    if command -v cgroupfs-mount >/dev/null; then cgroupfs-mount || true; fi
  fi
  local t0 pid
  t0=$(date +%s%N)
  nohup dockerd --host "unix://$SOCK" --data-root "$DIR/data" --exec-root "$DIR/exec" \
    --pidfile "$PIDFILE" --iptables=false --ip6tables=false --bridge=none --storage-driver=overlay2 \
    >>"$DIR/dockerd.log" 2>&1 </dev/null &
  pid=$!
  for _ in $(seq 1 300); do
    if ping_engine; then break; fi
    if ! kill -0 "$pid" 2>/dev/null; then
      log "dockerd died:"; tail -30 "$DIR/dockerd.log" >&2; exit 1
    fi
    sleep 0.1
  done
  if ! ping_engine; then log "dockerd not ready after 30 s"; tail -30 "$DIR/dockerd.log" >&2; exit 1; fi
  log "dockerd ready after $(( ($(date +%s%N) - t0) / 1000000 )) ms on $SOCK"
}

# Stop the engine as a host's shutdown does (SIGTERM: it stops its containers, then exits) and start it again
# on the same data: images, volumes and exited containers stay; callers and their count are untouched.
restart_engine() {
  if ! ping_engine || [ ! -f "$PIDFILE" ]; then log "not running"; exit 1; fi
  local pid
  pid=$(cat "$PIDFILE")
  kill "$pid"
  for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then log "dockerd did not stop within 60 s"; exit 1; fi
  launch_dockerd
  echo "$SOCK"
}

# Count the callers of `start` not yet matched by a `stop` (so one test run cannot stop another's engine).
users() {
  (
    flock 8
    local n
    n=$(cat "$DIR/users" 2>/dev/null || echo 0)
    n=$((n $1))
    [ "$n" -lt 0 ] && n=0
    echo "$n" >"$DIR/users"
    echo "$n"
  ) 8>"$DIR/users.lock"
}

stop_engine() {
  if [ "${1:-}" != "--force" ] && [ -d "$DIR" ]; then
    local left
    left=$(users -1)
    if [ "$left" -gt 0 ]; then log "still used by $left other caller(s) of start; not stopping"; return 0; fi
  fi
  if ping_engine; then
    local ids
    ids=$(docker -H "unix://$SOCK" ps -aq 2>/dev/null || true)
    # shellcheck disable=SC2086 # ids are engine-generated hex, one per word
    [ -z "$ids" ] || docker -H "unix://$SOCK" rm -f $ids >/dev/null 2>&1 || true
  fi
  if [ -f "$PIDFILE" ]; then
    local pid
    pid=$(cat "$PIDFILE")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  # dockerd leaves its data-root bind mount (and overlay mounts when killed hard) behind. Only mount points
  # equal to $DIR or under "$DIR/": a prefix match would also hit a sibling engine's /tmp/lvmh-docker-x.
  awk -v d="$DIR" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/mounts | sort -r |
    xargs -r -n1 umount -l 2>/dev/null || true
  rm -rf "$DIR"
  log "stopped"
}

case "${1:-start}" in
  install) install_engine ;;
  start) start_engine ;;
  restart) restart_engine ;;
  stop) stop_engine "${2:-}" ;;
  status) if ping_engine; then echo "$SOCK"; else log "not running"; exit 1; fi ;;
  env) echo "LVMH_TEST_DOCKER_SOCK=$SOCK" ;;
  *) log "usage: $0 install|start|restart|stop|status|env"; exit 2 ;;
esac
