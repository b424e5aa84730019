#!/usr/bin/env bash
# Start the Docker engine if it is not answering yet (sandbox.md: nothing starts it for us, in a session or
# in CI). Idempotent: a running engine is left alone. Needs root and Debian's docker.io (scripts/packages.sh).
#
# The engine is started as a C10k SUT needs it: with the userland proxy off, so that a published port goes
# through iptables (DNAT; 127.0.0.1:PORT too, Docker sets route_localnet on its bridges) instead of a
# docker-proxy process, which holds 6 descriptors per connection under dockerd's nofile and stops for good
# when it reaches it (3,331 connections at 20000 here; BENCHMARKS.md "docker-proxy"). A daemon.json that sets
# "userland-proxy" itself is obeyed (dockerd refuses the flag and the key together).
# EXECTL_USERLAND_PROXY=true keeps the proxy on (to see docker-proxy give out).
set -euo pipefail

LOG=${EXECTL_DOCKERD_LOG:-/var/log/exectl-dockerd.log}
TIMEOUT=${EXECTL_DOCKERD_TIMEOUT:-60}
CONFIG=/etc/docker/daemon.json

if docker info >/dev/null 2>&1; then
  # A running engine is left alone; say when it is not what a C10k SUT needs.
  if [ -r /var/run/docker.pid ]; then
    running=$(tr '\0' ' ' <"/proc/$(cat /var/run/docker.pid)/cmdline" 2>/dev/null || true)
    if [[ $running != *--userland-proxy=false* ]] && ! grep -qs '"userland-proxy" *: *false' "$CONFIG"; then
      echo "dockerd.sh: the running engine has the userland proxy on (docker-proxy carries loopback connections: at most ~nofile/6); stop it and run this script again to turn it off" >&2
    fi
  fi
  exit 0
fi

command -v dockerd >/dev/null || { echo "dockerd.sh: dockerd not installed (run scripts/packages.sh)" >&2; exit 1; }

# A stale pid file from a killed daemon makes dockerd refuse to start; remove it only if its process is gone.
pidfile=/var/run/docker.pid
if [ -f "$pidfile" ]; then
  pid=$(cat "$pidfile" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    echo "dockerd.sh: dockerd (pid $pid) is running but not answering yet; waiting" >&2
  else
    rm -f "$pidfile"
    pid=""
  fi
fi

if [ -z "${pid:-}" ]; then
  mkdir -p "$(dirname "$LOG")"
  flags=()
  if ! grep -qs '"userland-proxy"' "$CONFIG"; then
    flags+=("--userland-proxy=${EXECTL_USERLAND_PROXY:-false}")
  fi
  echo "dockerd.sh: starting dockerd ${flags[*]} (log: $LOG)"
  # setsid + nohup: the daemon must outlive this script and the shell/CI step that ran it.
  setsid nohup dockerd "${flags[@]}" >>"$LOG" 2>&1 </dev/null &
fi

for _ in $(seq 1 $((TIMEOUT * 4))); do
  if docker info >/dev/null 2>&1; then
    echo "dockerd.sh: engine ready ($(docker version -f '{{.Server.Version}}' 2>/dev/null || echo '?'))"
    exit 0
  fi
  sleep 0.25
done

echo "dockerd.sh: docker info still fails after ${TIMEOUT}s; last lines of $LOG:" >&2
tail -n 30 "$LOG" >&2 || true
exit 1
