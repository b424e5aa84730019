#!/usr/bin/env bash
# README's test command: set the machine up (idempotent), then run every test of the workspace, and close
# with one line counting them all.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Unit and integration tests of both crates; benches and examples are benchmarks, run on their own.
# --include-ignored: the tests that need the engine, root, nginx, sshd or the database servers are
# #[ignore = "needs ..."] so that plain `cargo test` passes without them; this machine has them all.
# --no-fail-fast: every suite runs, so one failure does not hide the others.
cargo test --workspace --locked --no-fail-fast --lib --bins --tests -- --include-ignored --test-threads=2 2>&1 | tee "$log"
sum() { grep -E '^test result:' "$log" | grep -oE "[0-9]+ $1" | awk '{s += $1} END {print s + 0}'; }
echo "tests: $(sum passed) passed, $(sum failed) failed"
