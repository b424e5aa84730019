#!/usr/bin/env bash
# Benchmark: growth while users come and go, as a soak (#39 part 2). Two single SQLite stacks of the
# stand-in side by side, healthy (the baseline) and with its leak-on-close fault (the seed study's
# leak); on each one idle level of USERS on minted tokens held for HOLD with `--churn 10s` (each user
# leaves after an exponential time of mean 10 s and comes back at once), sampled every second. Prints
# each level's line, then each instance's trends (Theil–Sen slope per hour with its 95 % bootstrap
# interval, growth over the hold, significant or not), the leaves and the limiting component.
# Usage: bash benches/soak_churn.sh [HOLD] [USERS]   (default 5m, 100; needs the engine and fixture images)
# BENCH_PREFIX (default "bench-") starts the stack names, BENCH_PORT (default 23461) and BENCH_PORT+1
# are their ports.
set -euo pipefail
cd "$(dirname "$0")/.."
hold=${1:-5m}
users=${2:-100}
prefix=${BENCH_PREFIX:-bench-}
port=${BENCH_PORT:-23461}
cargo build -q -p exectl
exectl=${CARGO_TARGET_DIR:-$PWD/target}/debug/exectl
state=$(mktemp -d); export EXECTL_STATE_DIR=$state
trap 'for n in ok leak; do "$exectl" teardown --stack "${prefix}soak-$n" --purge >/dev/null 2>&1 || true; done; rm -rf "$state"' EXIT
for s in ok:$port: leak:$((port + 1)):leak-on-close; do
  IFS=: read -r name p fault <<<"$s"
  extra=(); [ -n "$fault" ] && extra=(--set "STANDIN_FAULT=$fault")
  "$exectl" deploy single --db sqlite --stack "${prefix}soak-$name" --http-port "$p" --nofile 20000 \
    --images images/fixtures.yaml --set STANDIN_ROOM_CLEANUP_MS=500 "${extra[@]}" --json >/dev/null
  "$exectl" prepare --stack "${prefix}soak-$name" --accounts "$users" --bcrypt-cost 4 --mint-tokens --json >/dev/null
done
for name in ok leak; do
  "$exectl" bench --stack "${prefix}soak-$name" --scenario idle --levels "$users" --tokens --hold "$hold" \
    --ramp 5s --settle 20s --churn 10s --run-id "soak-$name" >"$state/soak-$name.out" 2>&1 &
done
wait || true
for name in ok leak; do
  grep '^level 1/1' "$state/soak-$name.out" || tail -3 "$state/soak-$name.out"
  python3 - "$state/benches/soak-$name/results.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
l = r["levels"][0]
g = l["figures"]["growth"]
for s in g["series"]:
    t = s["trend"]
    per_h = (lambda v: f"{v / 2**20:+.1f} MiB/h") if s["resource"] == "rss" else (lambda v: f"{v:+,.0f}/h")
    print(f"    {s['service']} {s['resource']:<11} {per_h(t['slope_per_h'])} (95 % {per_h(t['low_per_h'])} to "
          f"{per_h(t['high_per_h'])}), {s['pct_over_hold']:+.1f} % over the hold, "
          f"{'significant' if s['significant'] else 'noise'}")
hold_h = (l["span"]["hold_end_ms"] - l["span"]["hold_ms"]) / 3.6e6
leaves = g["recovery"]["leaves"]
print(f"    leaves {leaves} ({leaves / hold_h:,.0f}/h); limiting: {(l.get('limiting') or {}).get('component', 'none')}")
PY
done
