#!/usr/bin/env bash
# Benchmark: what docker-proxy (the engine's userland proxy) carries, on a private engine (a fake SUT of
# tests/sut/sut.sh: its own network namespace, socket, data root and bridge; the host's engine is not
# touched). A stand-in container publishes a port; a client inside the namespace opens SOCKETS to
# 127.0.0.1:PORT at RATE a second and holds them, while docker-proxy's descriptors are counted every 0.2 s.
# Then the same on an engine with "userland-proxy": false (iptables DNAT, no docker-proxy).
# Usage: bash benches/docker_proxy.sh [SOCKETS] [RATE]   (root; default 5000 sockets at 500/s; the engine's
# nofile is this shell's, or SUT_NOFILE)
set -euo pipefail
cd "$(dirname "$0")/.."
sockets=${1:-5000}
rate=${2:-500}
sut=bench-proxy
tmp=$(mktemp -d)
cleanup() { bash tests/sut/sut.sh down "$sut" >/dev/null 2>&1 || true; rm -rf "$tmp"; }
trap cleanup EXIT

cat >"$tmp/hold.py" <<'PY'
# Open N sockets to HOST:PORT at RATE/s, hold them HOLD s; print what happened.
import socket, sys, time
host, port, n, rate, hold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
socks, refused, closed, peak, t0 = [], 0, 0, 0, time.time()
def reap():
    global closed
    for s in list(socks):
        try:
            if s.recv(1) == b"":
                raise OSError
        except BlockingIOError:
            pass
        except OSError:
            closed += 1; socks.remove(s); s.close()
while len(socks) + refused + closed < n:
    due = min(n, int((time.time() - t0) * rate) + 1)
    while len(socks) + refused + closed < due:
        s = socket.socket(); s.settimeout(3)
        try:
            s.connect((host, port)); s.setblocking(False); socks.append(s)
        except OSError:
            refused += 1; s.close()
    peak = max(peak, len(socks))
    reap()
    time.sleep(0.01)
end = time.time() + hold
while time.time() < end:
    time.sleep(1); reap()
print(f"peak {peak} open at once; after the hold {len(socks)} open, {closed} closed by the far end, {refused} refused or failed")
PY

run() { # LABEL: the engine is up; publish, hold, count
  local label=$1 d="docker -H unix:///tmp/exectl-sut/$sut/docker.sock"
  $d run -d --name web -p 18080:8080 --ulimit nofile=20000:20000 \
    -e APP_SECRET=0123456789abcdefghijklmnopqrstuvwxyz -e API_JWT_SECRET=zyxwvutsrqponmlkjihgfedcba9876543210 \
    exectl-fixture/standin:latest >/dev/null
  sleep 2
  local pid="" p
  for p in $(pgrep -x docker-proxy || true); do
    tr '\0' ' ' <"/proc/$p/cmdline" | grep -q -- "-host-ip 0.0.0.0 -host-port 18080 " && pid=$p
  done
  echo "== $label"
  grep 'Max open files' "/proc/$(cat "/tmp/exectl-sut/$sut/docker.pid")/limits" | sed 's/^/dockerd: /'
  if [ -n "$pid" ]; then
    grep 'Max open files' "/proc/$pid/limits" | sed 's/^/docker-proxy: /'
    echo "docker-proxy idle: $(ls "/proc/$pid/fd" | wc -l) descriptors"
    ( most=0; while [ -n "$(ls "/proc/$pid/fd" 2>/dev/null)" ]; do
        n=$(ls "/proc/$pid/fd" | wc -l); [ "$n" -gt "$most" ] && most=$n; echo "$most" >"$tmp/most"; sleep 0.2
      done ) &
  else
    echo "no docker-proxy for port 18080"
  fi
  nsenter --net="/run/netns/exectl-$sut" python3 "$tmp/hold.py" 127.0.0.1 18080 "$sockets" "$rate" 5
  if [ -n "$pid" ]; then
    wait
    echo "docker-proxy: at most $(cat "$tmp/most") descriptors; state now: $(sed -n 's/^State:\t//p' "/proc/$pid/status" 2>/dev/null || echo gone)"
  fi
}

images="exectl-fixture/standin:latest"
SUT_IMAGES=$images bash tests/sut/sut.sh up "$sut" 42 >/dev/null
run "userland proxy on (the default)"
SUT_IMAGES=$images SUT_DAEMON_JSON='"userland-proxy": false' bash tests/sut/sut.sh up "$sut" 42 >/dev/null
run "userland proxy off"
