#!/usr/bin/env bash
# README's main job: set the machine up (idempotent), then stand up a benchmark stack on the local engine
# with the fixture images and the stand-in app.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release -q -p exectl
exectl=target/release/exectl
$exectl validate ha --instances 2 --images images/fixture-images.yaml
$exectl render ha --instances 2 --images images/fixture-images.yaml --out target/demo-stack
