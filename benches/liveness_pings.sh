#!/usr/bin/env bash
# Benchmark (#36 item 19): what the generator's liveness pings cost the SUT. USERS idle users held at
# once through an ha stack of the stand-in (×2 instances, nginx tuned-least-conn; the stand-in pings
# its clients every 30 s, as the app does), twice with each rule, alternated in one run:
#   old  --ping-after 5s: the client pings after 5 s of server silence, whatever the server does
#   new  the default: once the server is seen to ping, only past its own cadence + 5 s (35 s)
# For each run: the client's pings a second and the SUT's CPU (each container's cgroup CPU time) over
# the same window of the hold, from WINDOW_FROM s after the hold began (every socket has then seen the
# server's first ping) to 5 s before its end.
# Usage: bash benches/liveness_pings.sh [OUT]   (needs scripts/setup.sh first; about 12 minutes)
# Knobs: USERS (5000), HOLD (100s), WINDOW_FROM (40), RAMP (20s), REPEAT (2), STACK (pings), LB_PORT (18470),
# EXECTL (a binary to use instead of building the release one).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-$(mktemp -d /tmp/pings-XXXXXX)}
mkdir -p "$out"
users=${USERS:-5000}
hold=${HOLD:-100s}
from=${WINDOW_FROM:-40}
ramp=${RAMP:-20s}
repeat=${REPEAT:-2}
stack=${STACK:-pings}
port=${LB_PORT:-18470}
if [ -n "${EXECTL:-}" ]; then
  x=$(realpath "$EXECTL")
else
  cargo build --release -q -p exectl
  x=$PWD/target/release/exectl
fi
state=$(mktemp -d)
export EXECTL_STATE_DIR=$state
cleanup() {
  "$x" teardown --stack "$stack" --purge >/dev/null 2>&1 || true
  rm -rf "$state"
}
trap cleanup EXIT
log() { echo "pings: $*" >&2; }

log "deploy ha ×2, nginx tuned-least-conn"
"$x" deploy ha --stack "$stack" --lb-port "$port" --instances 2 --nginx tuned-least-conn --nofile 20000 \
  --worker-rlimit-nofile 20000 --worker-connections 10000 --images images/fixtures.yaml --json >"$out/deploy.json"
log "prepare $users accounts with tokens"
"$x" prepare --stack "$stack" --accounts "$users" --mint-tokens --bcrypt-cost 4 --json >"$out/prepare.json"

# CPU seconds of each of the stack's containers, from its cgroup: "name seconds" lines.
cpu() {
  for c in $(docker ps --filter "label=exectl.stack=$stack" --format '{{.Names}}'); do
    id=$(docker inspect -f '{{.Id}}' "$c")
    echo "${c#exectl-$stack-} $(awk '{printf "%.3f", $1/1e9}' /sys/fs/cgroup/cpuacct/docker/"$id"/cpuacct.usage)"
  done
}

# One run: the load in the background, the window's CPU and the progress lines' ping counts.
run() {
  local tag=$1
  shift
  log "load idle: $users users (ramp $ramp, hold $hold) $tag $*"
  "$x" load idle --stack "$stack" --users "$users" --tokens --ramp "$ramp" --hold "$hold" \
    --json --out "$out/load-$tag.json" "$@" >/dev/null 2>"$out/load-$tag.stderr" &
  local pid=$!
  # The hold begins when the progress line says "holding".
  until grep -q 'holding' "$out/load-$tag.stderr" 2>/dev/null; do sleep 0.5; done
  sleep "$from"
  local p0 t0 p1 t1
  p0=$(grep -o 'pings [0-9]*' "$out/load-$tag.stderr" | tail -1 | cut -d' ' -f2)
  t0=$(date +%s.%N)
  cpu >"$out/cpu0-$tag.txt"
  local left=$(( ${hold%s} - from - 5 ))
  sleep "$left"
  p1=$(grep -o 'pings [0-9]*' "$out/load-$tag.stderr" | tail -1 | cut -d' ' -f2)
  t1=$(date +%s.%N)
  cpu >"$out/cpu1-$tag.txt"
  echo "$tag $p0 $p1 $t0 $t1" >>"$out/windows.txt"
  wait "$pid" || log "load exited $?"
}
: >"$out/windows.txt"
for i in $(seq 1 "$repeat"); do
  run "old-$i" --ping-after 5s
  run "new-$i"
done

python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
def cpu(path):
    return {l.split()[0]: float(l.split()[1]) for l in open(path) if l.strip()}
print(f"{'run':8} {'pings/s':>9} {'hold pings/s':>13} {'held':>11} {'app (sum)':>10} {'nginx':>7} {'postgres':>9} {'redis':>7}   (CPU, % of one core, over the window)")
for line in open(os.path.join(out, "windows.txt")):
    tag, p0, p1, t0, t1 = line.split()
    secs = float(t1) - float(t0)
    a, b = cpu(os.path.join(out, f"cpu0-{tag}.txt")), cpu(os.path.join(out, f"cpu1-{tag}.txt"))
    pct = {k: (b[k] - a[k]) / secs * 100 for k in b if k in a}
    app = sum(v for k, v in pct.items() if k.startswith("app-"))
    s = json.load(open(os.path.join(out, f"load-{tag}.json")))
    held = f"{s['held_full_duration']}/{s['users']}"
    print(f"{tag:8} {(int(p1) - int(p0)) / secs:9.1f} {s['pings'].get('per_s_in_hold') or 0:13.1f} {held:>11} "
          f"{app:10.1f} {pct.get('nginx', 0):7.1f} {pct.get('postgres', 0):9.1f} {pct.get('redis', 0):7.1f}")
    print(f"         {s['pings']}")
PY
log "results in $out"
