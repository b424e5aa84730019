#!/usr/bin/env bash
# Start the Docker engine if it is not answering yet (sandbox.md: nothing starts it for us, in a session or
# in CI). Idempotent: a running engine is left alone. Needs root and Debian's docker.io (scripts/packages.sh).
set -euo pipefail

LOG=${EXECTL_DOCKERD_LOG:-/var/log/exectl-dockerd.log}
TIMEOUT=${EXECTL_DOCKERD_TIMEOUT:-60}

if docker info >/dev/null 2>&1; then
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
  echo "dockerd.sh: starting dockerd (log: $LOG)"
  mkdir -p "$(dirname "$LOG")"
  # setsid + nohup: the daemon must outlive this script and the shell/CI step that ran it.
  setsid nohup dockerd >>"$LOG" 2>&1 </dev/null &
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
