#!/usr/bin/env bash
# README's main job: set the machine up (idempotent: packages, engine, fixture images), deploy an HA stack
# with the stand-in app on the local engine, seed it with benchmark accounts, show its state, and run a short
# benchmark whose HTML report it names.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release -q -p exectl
exectl=target/release/exectl
$exectl deploy --config scripts/demo.yaml --images images/fixtures.yaml
$exectl prepare --stack demo --accounts 1000 --users-per-project 4
# deploy returns as soon as every service answers; Docker's own health turns healthy on its next tick.
for _ in $(seq 30); do $exectl status --stack demo --expect-healthy >/dev/null 2>&1 && break; sleep 2; done
$exectl status --stack demo --expect-healthy
# Two levels of idle sockets; the leak check after each waits for the app's room cleanup (30 s). A 20 s
# hold outlasts the 500 logins (bcrypt cost 10 on this machine's cores: ≈ 15 s), so all 500 are open at once.
bench_rc=0
$exectl bench --stack demo --levels 100,500 --hold 20s --ramp 3s --run-id "demo-$(date +%s)" || bench_rc=$?
[ "$bench_rc" -le 1 ] || exit "$bench_rc"   # 1: a level failed, which the report shows; anything else is an error
echo "demo stack up: nginx LB on http://127.0.0.1:8090 — remove it with: $exectl teardown --stack demo --purge"
