#!/usr/bin/env bash
# Benchmark: the largest room (#39 part 1, `sweep --find-room`). One sweep over the stand-in healthy
# and with its slow-relay fault (one relay lane, each frame paying its room's size × STANDIN_RELAY_US,
# 100 µs by default): for each, the room-size search at USERS collab users at once, from rooms of 2
# to rooms of USERS (grown ×2, then bisected to 10 %). Baseline: the healthy stand-in, in the same
# sweep. Prints each value's largest room, its probes (✓ met every objective, ✗ did not) and the
# delivery p95 of each probe, the sweep's wall time, and the headline.
# Usage: bash benches/room_search.sh [USERS]   (default 200; needs the engine and fixture images)
# BENCH_PREFIX (default "bench-") starts the stack's name, BENCH_PORT (default 18613) is its port.
set -euo pipefail
cd "$(dirname "$0")/.."
users=${1:-200}
stack=${BENCH_PREFIX:-bench-}room-search
port=${BENCH_PORT:-18613}
cargo build -q -p exectl
exectl=${CARGO_TARGET_DIR:-$PWD/target}/debug/exectl
state=$(mktemp -d); export EXECTL_STATE_DIR=$state
trap '"$exectl" teardown --stack "$stack" --purge >/dev/null 2>&1 || true; rm -rf "$state"' EXIT
t0=$(date +%s)
"$exectl" sweep single --db sqlite --stack "$stack" --http-port "$port" --nofile 20000 \
  --images images/fixtures.yaml --health-interval 1s --set STANDIN_ROOM_CLEANUP_MS=500 \
  --vary env.STANDIN_FAULT=none,slow-relay --scenario collab \
  --find-room --users "$users" --from 2 --to "$users" --hold 10s --ramp 5s --settle 30s \
  --bcrypt-cost 4 --run-id room-search >"$state/sweep.out" 2>&1 || { tail -5 "$state/sweep.out"; exit 1; }
echo "sweep: $(( $(date +%s) - t0 )) s wall"
python3 - "$state/sweeps/room-search" <<'PY'
import json, sys
d = sys.argv[1]
r = json.load(open(f"{d}/results.json"))
for p in r["points"]:
    cap = ("at least " if p["at_least"] else "") + str(p["capacity"])
    print(f"{p['values'][0]:<11} largest room {cap}")
    by_bench = {l["bench"]: l for l in p["levels"]}
    for q in p["probes"]:
        l = by_bench.get(q["run_id"], {})
        d95 = (l.get("delivery_ms") or {}).get("p95")
        why = "; ".join(x.split(":")[0] for x in q.get("reasons", []))
        mark = "✓" if q["passed"] else ("invalid" if q.get("invalid") else "✗")
        print(f"    rooms of {q['users']:>4}: {mark}  delivery p95 {d95 if d95 is None else round(d95, 1)} ms"
              + (f"  ({why})" if why else ""))
PY
grep '^max collaborators' "$state/sweep.out" || true
