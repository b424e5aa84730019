#!/usr/bin/env bash
# README's main job: set the machine up (idempotent: packages, engine, fixture images), deploy an HA stack
# with the stand-in app on the local engine, seed it with benchmark accounts, and show its state.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release -q -p exectl
exectl=target/release/exectl
$exectl deploy --config scripts/demo.yaml --images images/fixtures.yaml
$exectl prepare --stack demo --accounts 1000 --users-per-project 4
$exectl status --stack demo --expect-healthy
echo "demo stack up: nginx LB on http://127.0.0.1:8090 — remove it with: $exectl teardown --stack demo --purge"
