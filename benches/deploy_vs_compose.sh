#!/usr/bin/env bash
# Benchmark: exectl deploy / no-op re-deploy / teardown of ha with 4 instances on warm images, next to
# docker-compose up -d / no-op re-run / down of the same rendered file, in one run, as ratios.
# Measured twice: with the image's real healthcheck interval (30 s, the default: compose waits for
# Docker's health tick there, deploy for the apps' own /healthcheck answer), then with --health-interval 1s.
# Usage: bash benches/deploy_vs_compose.sh [ROUNDS]   (needs the engine and fixture images: scripts/setup.sh)
# BENCH_PREFIX (default "bench-") starts the two stack names; BENCH_PORT (default 18290) and the next
# port are the two LB ports, so that engineers sharing an engine can run it at once. The release build
# goes to CARGO_TARGET_DIR when set (else ./target).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
prefix=${BENCH_PREFIX:-bench-}
port=${BENCH_PORT:-18290}
cargo build --release -q -p exectl
exectl=${CARGO_TARGET_DIR:-$PWD/target}/release/exectl
state=$(mktemp -d); export EXECTL_STATE_DIR=$state
work=$(mktemp -d)
trap 'rm -rf "$state" "$work"' EXIT
limits=(--nofile 20000 --worker-rlimit-nofile 20000 --worker-connections 10000 --cpus 1 --memory 512m
        --images images/fixtures.yaml --instances 4)
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc -l; }
cs=${prefix}compose; es=${prefix}exectl

# One interval: $1 is the --health-interval flag value, or "default" for the image's 30 s.
measure() {
  local interval=() label=$1
  [ "$1" != default ] && interval=(--health-interval "$1")
  "$exectl" render ha --stack "$cs" --lb-port "$port" "${limits[@]}" "${interval[@]}" --out "$work/compose" >/dev/null
  compose() { docker-compose --compatibility -p "$cs" -f "$work/compose/compose.yaml" "$@"; }
  declare -A sum=()
  add() { sum[$1]=$(echo "${sum[$1]:-0} + $2" | bc -l); }
  for r in $(seq "$rounds"); do
    t=$(now); "$exectl" deploy ha --stack "$es" --lb-port $((port + 1)) "${limits[@]}" "${interval[@]}" --json >"$work/deploy.json"; add e_up "$(since "$t")"
    t=$(now); "$exectl" deploy ha --stack "$es" --lb-port $((port + 1)) "${limits[@]}" "${interval[@]}" --json >/dev/null; add e_noop "$(since "$t")"
    t=$(now); "$exectl" teardown --stack "$es" >/dev/null; add e_down "$(since "$t")"
    "$exectl" teardown --stack "$es" --purge >/dev/null

    t=$(now); compose up -d >/dev/null 2>&1; add c_up "$(since "$t")"
    t=$(now); compose up -d >/dev/null 2>&1; add c_noop "$(since "$t")"
    t=$(now); compose down >/dev/null 2>&1; add c_down "$(since "$t")"
    compose down -v >/dev/null 2>&1 || true
    docker volume rm "exectl-$cs-app-data" "exectl-$cs-db-data" "exectl-$cs-redis-data" >/dev/null 2>&1 || true
  done
  avg() { echo "scale=2; ${sum[$1]} / $rounds" | bc -l; }
  ratio() { echo "scale=2; ${sum[$1]} / ${sum[$2]}" | bc -l; }
  echo
  echo "ha, 4 instances, health interval $label, warm fixture images, $rounds round(s), $(date -u +%F)"
  printf '%-22s %8s %8s %7s %s\n' step exectl compose ratio target
  printf '%-22s %7ss %7ss %6sx %s\n' "deploy (ready)" "$(avg e_up)" "$(avg c_up)" "$(ratio e_up c_up)" "<= 0.7"
  printf '%-22s %7ss %7ss %6sx %s\n' "no-op re-deploy" "$(avg e_noop)" "$(avg c_noop)" "$(ratio e_noop c_noop)" "<= 0.5"
  printf '%-22s %7ss %7ss %6sx %s\n' "teardown / down" "$(avg e_down)" "$(avg c_down)" "$(ratio e_down c_down)" "<= 1.0"
  # What made each service ready in the last deploy (the apps: their own probe, not Docker's tick).
  python3 - "$work/deploy.json" <<'PY'
import json, sys
ready = json.load(open(sys.argv[1]))["ready"]
print("  ready:", ", ".join("%s %s %.1fs" % (r["service"], r["by"], r["seconds"]) for r in ready))
PY
}
measure default
measure 1s
