#!/usr/bin/env bash
# README's test command: set the machine up (idempotent), then run every test of the workspace with
# cargo-nextest (.config/nextest.toml: each test in its own process, four at once, the longest first),
# and close with the slowest ten and one line counting them all.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# --run-ignored all: the tests that need the engine, root, nginx, sshd or the database servers are
# #[ignore = "needs ..."] so that plain `cargo test` passes without them; this machine has them all.
# --no-fail-fast: every test runs, so one failure does not hide the others.
status=0
cargo nextest run --workspace --locked --no-fail-fast --lib --bins --tests --run-ignored all || status=$?
python3 scripts/test_times.py target/nextest/default/junit.xml
exit "$status"
