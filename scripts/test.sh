#!/usr/bin/env bash
# README's test command: set the machine up (idempotent), then run every test of the workspace with
# cargo-nextest (.config/nextest.toml: each test in its own process, four at once, the longest first;
# then the few that need a quiet host, alone),
# and close with the slowest ten and one line counting them all.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# --run-ignored all: the tests that need the engine, root, nginx, sshd or the database servers are
# #[ignore = "needs ..."] so that plain `cargo test` passes without them; this machine has them all.
# --no-fail-fast: every test runs, so one failure does not hide the others.
# The tests that need one of the host's two CPUs free run after the others, alone (profile `alone`):
# an app on one thread under a 2-CPU quota is named as the limit only while nothing else keeps the
# host busy, or the bench rightly names the host's CPU (it did, once in two runs, beside three others).
alone='binary(bench_findings) & test(=one_thread_saturates_under_a_two_cpu_quota_and_is_named_on_its_scale)'
run() { cargo nextest run --workspace --locked --no-fail-fast --lib --bins --tests --run-ignored all "$@"; }
rm -f target/nextest/default/junit.xml target/nextest/alone/junit.xml
status=0
run -E "not ($alone)" || status=$?
run --profile alone -E "$alone" || status=$?
python3 scripts/test_times.py target/nextest/default/junit.xml target/nextest/alone/junit.xml
exit "$status"
