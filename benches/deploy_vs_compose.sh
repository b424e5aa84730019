#!/usr/bin/env bash
# Benchmark: exectl deploy / no-op re-deploy / teardown of ha with 4 instances on warm images, next to
# docker-compose up -d / no-op re-run / down of the same rendered file, in one run, as ratios.
# Usage: bash benches/deploy_vs_compose.sh [ROUNDS]   (needs the engine and fixture images: scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
cargo build --release -q -p exectl
exectl=$PWD/target/release/exectl
state=$(mktemp -d); export EXECTL_STATE_DIR=$state
work=$(mktemp -d)
trap 'rm -rf "$state" "$work"' EXIT
limits=(--nofile 20000 --worker-rlimit-nofile 20000 --worker-connections 10000 --cpus 1 --memory 512m
        --health-interval 1s --images images/fixtures.yaml --instances 4)
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc -l; }

"$exectl" render ha --stack bench-compose --lb-port 18290 "${limits[@]}" --out "$work/compose" >/dev/null
compose() { docker-compose --compatibility -p bench-compose -f "$work/compose/compose.yaml" "$@"; }

declare -A sum
add() { sum[$1]=$(echo "${sum[$1]:-0} + $2" | bc -l); }
for r in $(seq "$rounds"); do
  t=$(now); "$exectl" deploy ha --stack bench-exectl --lb-port 18291 "${limits[@]}" --json >/dev/null; add e_up "$(since "$t")"
  t=$(now); "$exectl" deploy ha --stack bench-exectl --lb-port 18291 "${limits[@]}" --json >/dev/null; add e_noop "$(since "$t")"
  t=$(now); "$exectl" teardown --stack bench-exectl >/dev/null; add e_down "$(since "$t")"
  "$exectl" teardown --stack bench-exectl --purge >/dev/null

  t=$(now); compose up -d >/dev/null 2>&1; add c_up "$(since "$t")"
  t=$(now); compose up -d >/dev/null 2>&1; add c_noop "$(since "$t")"
  t=$(now); compose down >/dev/null 2>&1; add c_down "$(since "$t")"
  compose down -v >/dev/null 2>&1 || true
  docker volume rm exectl-bench-compose-app-data exectl-bench-compose-db-data exectl-bench-compose-redis-data >/dev/null 2>&1 || true
done
avg() { echo "scale=2; ${sum[$1]} / $rounds" | bc -l; }
ratio() { echo "scale=2; ${sum[$1]} / ${sum[$2]}" | bc -l; }
echo "ha, 4 instances, warm fixture images, $rounds round(s), $(date -u +%F)"
printf '%-22s %8s %8s %7s %s\n' step exectl compose ratio target
printf '%-22s %7ss %7ss %6sx %s\n' "deploy (all healthy)" "$(avg e_up)" "$(avg c_up)" "$(ratio e_up c_up)" "<= 1.0"
printf '%-22s %7ss %7ss %6sx %s\n' "no-op re-deploy" "$(avg e_noop)" "$(avg c_noop)" "$(ratio e_noop c_noop)" "<= 0.5"
printf '%-22s %7ss %7ss %6sx %s\n' "teardown / down" "$(avg e_down)" "$(avg c_down)" "$(ratio e_down c_down)" "<= 1.0"
