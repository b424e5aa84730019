#!/usr/bin/env bash
# Benchmark: `exectl status --json` latency on ha with 4 instances (every service inspected, CPU sampled,
# limits read back, each instance's WebSocket counts queried), next to `docker stats --no-stream` of the
# same containers (the baseline: the engine's own one-shot view, with less in it). Target: under 500 ms.
# Usage: bash benches/status_latency.sh [RUNS]   (needs scripts/setup.sh first)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
cargo build --release -q -p exectl
exectl=$PWD/target/release/exectl
state=$(mktemp -d); export EXECTL_STATE_DIR=$state
trap '"$exectl" teardown --stack bench-status --purge >/dev/null 2>&1 || true; rm -rf "$state"' EXIT
"$exectl" deploy ha --stack bench-status --lb-port 18490 --instances 4 --nofile 20000 --worker-rlimit-nofile 20000 \
  --worker-connections 10000 --cpus 1 --memory 512m --health-interval 1s --images images/fixtures.yaml --json >/dev/null
containers=$(docker ps -q --filter label=exectl.stack=bench-status)
ms() { local t=$(date +%s%N); "$@" >/dev/null; echo $(( ($(date +%s%N) - t) / 1000000 )); }
e=(); b=()
for _ in $(seq "$runs"); do
  e+=("$(ms "$exectl" status --stack bench-status --json)")
  b+=("$(ms docker stats --no-stream $containers)")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
max() { printf '%s\n' "$@" | sort -n | tail -1; }
em=$(median "${e[@]}"); bm=$(median "${b[@]}")
echo "status latency, ha with 4 instances (7 containers), $runs runs, $(date -u +%F)"
echo "exectl status --json:     median ${em} ms, max $(max "${e[@]}") ms (target < 500 ms)"
echo "docker stats --no-stream: median ${bm} ms, max $(max "${b[@]}") ms"
echo "ratio exectl / docker stats: $(echo "scale=2; $em / $bm" | bc -l)"
