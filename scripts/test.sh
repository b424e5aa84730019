#!/usr/bin/env bash
# README's test command: set the machine up (idempotent), then run every test of the workspace with
# cargo-nextest (.config/nextest.toml: each test in its own process, six at once, the longest first;
# then the CPU verdicts, one at a time, nothing beside),
# and close with the slowest ten and one line counting them all.
set -euo pipefail
cd "$(dirname "$0")/.."
what=(--workspace --locked --lib --bins --tests)
run() { cargo nextest run "${what[@]}" --no-fail-fast --run-ignored all "$@"; }
# The build (minutes of CPU) runs while setup starts the services and builds the fixture images (on a
# fresh machine mostly downloads and package installs): the packages first, for the toolchain's nextest.
bash scripts/packages.sh
build_log=$(mktemp)
cargo nextest run "${what[@]}" --no-run >"$build_log" 2>&1 &
build=$!
# `|| true`: set -e holds inside the trap too, and the build is over by then (a failed kill made a
# green run exit 1).
trap 'kill "$build" 2>/dev/null || true; rm -f "$build_log"' EXIT
echo "test.sh: building the tests while setup runs (cargo's output: $build_log, shown if it fails)"
bash scripts/setup.sh
if ! wait "$build"; then
  cat "$build_log" >&2
  echo "test.sh: the build failed" >&2
  exit 101
fi
# --run-ignored all: the tests that need the engine, root, nginx, sshd or the database servers are
# #[ignore = "needs ..."] so that plain `cargo test` passes without them; this machine has them all.
# --no-fail-fast: every test runs, so one failure does not hide the others.
# Two runs (.config/nextest.toml): every test but the CPU verdicts six at once, then the CPU verdicts
# one at a time with nothing beside them (beside the others the host's CPUs were saturated, and the
# bench rightly named the host, or only the instance that still got its quota: a failure in most runs).
rm -f target/nextest/default/junit.xml target/nextest/alone/junit.xml
status=0
run || status=$?
# The first run's last teardowns leave the kernel busy for a while (network namespaces are cleaned up
# after their containers are gone): a CPU verdict begun then named the host (0.6 CPU in the kernel).
# Wait, at most 2 minutes, for the host to be under half a CPU busy over 3 s.
busy() { # CPUs busy over 3 s, from /proc/stat
  local a b
  a=($(head -1 /proc/stat)); sleep 3; b=($(head -1 /proc/stat))
  awk -v a="${a[*]}" -v b="${b[*]}" 'BEGIN { split(a, x); split(b, y); t = 0; for (i = 2; i <= 9; i++) t += y[i] - x[i];
    idle = (y[5] - x[5]) + (y[6] - x[6]); print (t - idle) / 300 }'
}
for _ in $(seq 40); do
  now=$(busy); awk -v n="$now" 'BEGIN { exit !(n < 0.5) }' && break
  echo "test.sh: the host is busy ($now CPUs over 3 s); the CPU verdicts wait for it"
done
run --profile alone || status=$?
python3 scripts/test_times.py target/nextest/default/junit.xml target/nextest/alone/junit.xml
exit "$status"
