#!/usr/bin/env bash
# Benchmark (#23): 50,000 WebSockets open at once for 60 s from one generator host, through the tuned HA
# stack on this machine: N stand-in instances (each under the 20,000-file limit), nginx tuned-least-conn
# with enough workers that none passes 20,000 files, `--source-addrs` over 127.0.0.x (one address holds
# ~28k ports towards the door) and `--processes` by default (3 under a 20,000-file hard limit).
# Prints the generator's total peak RSS and CPU (all slices, parent included), the connection rate, each
# instance's count at the peak (`exectl status`, sampled every 2 s during the run), and the 10,000 run of
# the same stack and flags beside it (same machine, same minutes). Then, with BENCH=1, `exectl bench` at
# 10,000 and 50,000 on the same stack, its report in OUT.
# Usage: bash benches/c50k.sh [OUT]   (needs scripts/setup.sh first; about 10 minutes, 25 with BENCH=1)
# With PING5=1, the 50,000 run again with the liveness pings of a 10,000 run (--ping-after 5s) beside
# the default cadence (25 s at 50,000: 2,000 pings a second in all).
# Knobs: USERS (50000), INSTANCES (4), WORKERS (16: 10,000 connections each, 5,000 proxied sockets), RAMP (100s), HOLD (60s), BENCH (0), PING5 (0).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-$(mktemp -d /tmp/c50k-XXXXXX)}
mkdir -p "$out"
users=${USERS:-50000}
instances=${INSTANCES:-4}
workers=${WORKERS:-16}
ramp=${RAMP:-100s}
hold=${HOLD:-60s}
stack=c50k
cargo build --release -q -p exectl
x=$PWD/target/release/exectl
state=$(mktemp -d)
export EXECTL_STATE_DIR=$state
cleanup() {
  "$x" teardown --stack "$stack" --purge >/dev/null 2>&1 || true
  rm -rf "$state"
}
trap cleanup EXIT
log() { echo "c50k: $*" >&2; }

log "deploy ha ×$instances, nginx tuned-least-conn ×$workers workers"
"$x" deploy ha --stack "$stack" --lb-port 18450 --instances "$instances" --nofile 20000 \
  --worker-rlimit-nofile 20000 --worker-connections 10000 --worker-processes "$workers" \
  --memory 3g --images images/fixtures.yaml --json >"$out/deploy.json"
log "prepare $users accounts with tokens"
/usr/bin/time -f '%e s wall' "$x" prepare --stack "$stack" --accounts "$users" --mint-tokens --json \
  >"$out/prepare.json" 2>"$out/prepare.time"

# One run of N users: the load's summary, and exectl status every 2 s while it runs.
run() {
  local n=$1 tag=$2
  shift 2
  log "load idle: $n users (ramp $ramp, hold $hold) $*"
  : >"$out/status-$tag.jsonl"
  (
    while :; do
      "$x" status --stack "$stack" --json 2>/dev/null | tr -d '\n' >>"$out/status-$tag.jsonl" || true
      echo >>"$out/status-$tag.jsonl"
      sleep 2
    done
  ) &
  local sampler=$!
  # time -v: the parent's own peak; the slices report theirs in generator.slices.
  /usr/bin/time -v "$x" load idle --stack "$stack" --users "$n" --tokens --ramp "$ramp" --hold "$hold" \
    --source-addrs 127.0.0.1-127.0.0.4 --quiet --json --out "$out/load-$tag.json" "$@" \
    >/dev/null 2>"$out/load-$tag.stderr" || log "load exited $?"
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  "$x" status --stack "$stack" --expect-idle --json >"$out/idle-after-$tag.json" 2>/dev/null || true
}
run 10000 10k
run "$users" 50k
tags="10k 50k"
if [ "${PING5:-0}" = 1 ]; then
  run "$users" 50k-ping5 --ping-after 5s
  tags="$tags 50k-ping5"
fi

python3 - "$out" $tags <<'EOF'
import json, sys, os
out = sys.argv[1]
def peak(tag):
    best = None
    for line in open(os.path.join(out, f"status-{tag}.jsonl")):
        line = line.strip()
        if not line:
            continue
        try:
            s = json.loads(line)
        except ValueError:
            continue
        if best is None or s["total_connections"] > best["total_connections"]:
            best = s
    return best
for tag in sys.argv[2:]:
    j = json.load(open(os.path.join(out, f"load-{tag}.json")))
    p = j.get("plateau") or {}
    slices = j["generator"]["slices"]
    mib = lambda b: b / 2**20
    print(f"== {tag}: exectl load idle, {j['users']} users ==")
    print(f"held at once for the hold   min {p.get('min_open')} of {p.get('target')} over {p.get('end_s', 0) - p.get('start_s', 0):.1f} s (peak {p.get('peak_open')})")
    print(f"held full duration          {j['held_full_duration']}  failures {j['failures']}")
    print(f"liveness                    ping after {j['settings']['ping_after_s']} s of silence, stalled {j.get('stalled')}")
    print(f"generator peak RSS (total)  {mib(j['client_peak_rss_bytes']):.1f} MiB = {j['client_peak_rss_bytes'] / 1024 / max(j['connected'], 1):.1f} KiB per socket")
    print(f"generator CPU (total)       {j['client_cpu_seconds']} s over {j['duration_s']} s")
    print(f"connection rate             {j['connect_rate_per_s']} /s  connect ms {j['connect_ms']}")
    for u in slices:
        print(f"  slice {u['slice']} pid {u['pid']} users {u['users']} held {u['held']} CPU {u['cpu_s']:.1f} s RSS {mib(u['peak_rss_bytes']):.1f} MiB skew {u.get('start_skew_ms')} ms")
    print(f"generator-bound             {j['generator'].get('bound')}")
    s = peak(tag)
    if s:
        counts = ", ".join(f"{i['name']} {i['totalConnections']}" for i in s["instances"])
        print(f"instances at the peak       {counts} (sum {s['total_connections']})")
    after = json.load(open(os.path.join(out, f"idle-after-{tag}.json")))
    print(f"instances after             {after['total_connections']} connections")
    print()
EOF
grep -h "Maximum resident\|Elapsed" "$out"/load-*.stderr | sed 's/^\s*/parent: /' || true
cat "$out/prepare.time"

if [ "${BENCH:-0}" = 1 ]; then
  log "bench idle 10000,$users"
  "$x" bench --stack "$stack" --scenario idle --levels "10000,$users" --ramp "$ramp" --hold "$hold" --tokens \
    --source-addrs 127.0.0.1-127.0.0.4 --continue-after-fail --out "$out/bench" --json >"$out/bench.json" || true
  python3 - "$out/bench.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
for l in r["levels"]:
    f = l["figures"]; p = f.get("plateau") or {}
    print(f"bench {l['users']}: passed {l['passed']} min open {p.get('min_open')} held {f['held']} limiting {l.get('limiting')} reasons {l['reasons']}")
print("verdict", r["verdict"])
EOF
  echo "report: $out/bench/report.html"
fi
echo "figures in $out"
