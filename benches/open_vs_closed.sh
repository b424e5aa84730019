#!/usr/bin/env bash
# Benchmark: the open model (--arrival-rate) against the closed one (the baseline) while the app is
# paused, in one run: 300 logins, 50 a second with at most 40 in flight (open) or 4 in flight over the
# same 6 s (closed), the app paused for PAUSE seconds once the first sessions have started. Prints each
# run's login p50/p95/max and the open model's p95 as a ratio of the closed one's: how much the closed
# model hides (coordinated omission).
# Usage: bash benches/open_vs_closed.sh [PAUSES...]   (default: 1 4; needs the engine and fixture images)
# BENCH_PREFIX (default "bench-") starts the stack name, BENCH_PORT (default 18295) is its HTTP port.
set -euo pipefail
cd "$(dirname "$0")/.."
pauses=("${@:-1 4}"); read -ra pauses <<<"${pauses[*]}"
stack=${BENCH_PREFIX:-bench-}arrive
port=${BENCH_PORT:-18295}
# The tests' profile: what is measured is the app's pause, not the client's speed.
cargo build -q -p exectl
exectl=${CARGO_TARGET_DIR:-$PWD/target}/debug/exectl
state=$(mktemp -d); export EXECTL_STATE_DIR=$state
work=$(mktemp -d)
trap '"$exectl" teardown --stack "$stack" --purge >/dev/null 2>&1 || true; rm -rf "$state" "$work"' EXIT
"$exectl" deploy single --db sqlite --stack "$stack" --http-port "$port" --nofile 20000 \
  --images images/fixtures.yaml --json >/dev/null
"$exectl" prepare --stack "$stack" --accounts 300 --users-per-project 1 --bcrypt-cost 4 --json >/dev/null
app=exectl-$stack-app

# One run: $1 label, $2 pause (s), the rest load flags. Pauses the app once the progress line shows a
# started session (the load checks the front door before it starts any).
run() {
  local label=$1 pause=$2; shift 2
  "$exectl" load login-burst --stack "$stack" --users 300 --run-id "b-$label" --json "$@" \
    >"$work/$label.json" 2>"$work/$label.err" &
  local pid=$!
  until grep -qE ' started [1-9]' "$work/$label.err"; do sleep 0.05; done
  docker pause "$app" >/dev/null; sleep "$pause"; docker unpause "$app" >/dev/null
  wait "$pid" || true
  python3 - "$work/$label.json" "$label" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); l = j["login_ms"]; a = j.get("arrivals")
late = f"{a['waited_for_cap']} waited for the cap, up to {a['longest_wait_ms']:.0f} ms" if a else "closed model"
print(f"{sys.argv[2]:<16} p50 {l['p50']:>8.1f} ms  p95 {l['p95']:>8.1f} ms  max {l['max']:>8.1f} ms  failed {j['failed']}  ({late})")
PY
}
for p in "${pauses[@]}"; do
  echo "app paused ${p} s:"
  run "open-${p}s" "$p" --arrival-rate 50 --dial-concurrency 40
  run "closed-${p}s" "$p" --ramp 6s --dial-concurrency 4
  python3 - "$work/open-${p}s.json" "$work/closed-${p}s.json" <<'PY'
import json, sys
o, c = (json.load(open(f))["login_ms"]["p95"] for f in sys.argv[1:])
print(f"  open p95 / closed p95 (baseline) = {o / max(c, 1e-3):.0f}x")
PY
done
