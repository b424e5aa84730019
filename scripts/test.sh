#!/usr/bin/env bash
# README's test command: set the machine up (idempotent), then run every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo test --workspace --locked -- --test-threads=2
