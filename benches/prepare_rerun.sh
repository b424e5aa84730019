#!/usr/bin/env bash
# Benchmark: `exectl prepare` run again at once (it adds nothing) on each database, against the first run
# of the same round (the baseline). Before STRAIGHT_JOIN, MariaDB's statistics still said 0 users just
# after a seed, and the re-run's joins scanned users × projects × the rows: 35 s where the first took 0.3.
# Usage: bash benches/prepare_rerun.sh [ROUNDS] [ACCOUNTS]   (defaults 3, 1000; needs scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
n=${2:-1000}
cargo build --release -q -p exectl
exectl=$PWD/target/release/exectl
state=$(mktemp -d); export EXECTL_STATE_DIR=$state
stacks=()
trap 'for s in "${stacks[@]}"; do "$exectl" teardown --stack $s --purge >/dev/null 2>&1 || true; done; rm -rf "$state"' EXIT
now() { date +%s.%N; }
port=${EXECTL_BENCH_HTTP_PORT:-18396}
printf '%-9s %6s %12s %12s %7s\n' db round first_s rerun_s ratio
for db in mariadb postgres sqlite; do
  stack=bench-rerun-$db; stacks+=("$stack")
  "$exectl" deploy single --stack $stack --db $db --http-port "$port" --nofile 20000 --health-interval 1s \
    --images images/fixtures.yaml --json >/dev/null
  for r in $(seq "$rounds"); do
    "$exectl" prepare --stack $stack --reset >/dev/null
    args=(prepare --stack $stack --accounts "$n" --projects $((n / 4)) --users-per-project 4 --bcrypt-cost 4 --json)
    t=$(now); "$exectl" "${args[@]}" >/dev/null; first=$(echo "$(now) - $t" | bc -l)
    t=$(now); "$exectl" "${args[@]}" >/dev/null; rerun=$(echo "$(now) - $t" | bc -l)
    printf '%-9s %6s %12.2f %12.2f %7.1f\n' $db "$r" "$first" "$rerun" "$(echo "$rerun / $first" | bc -l)"
  done
  "$exectl" teardown --stack $stack --purge >/dev/null
done
