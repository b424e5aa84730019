#!/usr/bin/env bash
# Benchmark (#24): `exectl bench` on a real 3-node swarm (tests/swarm/rig.sh on this machine): ha ×4, the
# instances two on each worker, PostgreSQL, Redis and nginx (tuned-least-conn) on the manager; idle users
# with minted tokens through nginx's host port. Prints each level's result (how many were open at once
# for how long, the instances' own sum), the limiting component, the busiest container per node and each
# node's CPU by its own count at p90 over the top level's hold; the report (with its node column) and a
# screenshot of it are left in OUT.
# Usage: bash benches/swarm_bench.sh [OUT]   (needs scripts/setup.sh first; about 6 minutes)
# Knobs: LEVELS (1000,2500,5000), HOLD (30s), RAMP (10s), SWARM_INDEX (36: nodes on 10.199.36-38).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-$(mktemp -d /tmp/swarm-bench-XXXXXX)}
mkdir -p "$out"
levels=${LEVELS:-1000,2500,5000}
hold=${HOLD:-30s}
ramp=${RAMP:-10s}
export SWARM_INDEX=${SWARM_INDEX:-36}
name=bsw
stack=sb
cargo build --release -q -p exectl
x=$PWD/target/release/exectl
state=$(mktemp -d)
export EXECTL_STATE_DIR=$state
log() { echo "swarm-bench: $*" >&2; }
cleanup() {
  bash tests/swarm/rig.sh down "$name" >/dev/null 2>&1 || true
  rm -rf "$state"
}
trap cleanup EXIT

log "swarm $name up"
eval "$(bash tests/swarm/rig.sh up "$name" | grep -E '^[A-Z0-9_]+=')"
t=(--target "swarm+ssh://root@$MANAGER_ADDR:$SSH_PORT" --identity "$KEY" --known-hosts "$KNOWN_HOSTS"
  --docker-socket "$NODE_DOCKER_SOCKET")
log "deploy ha ×4 over $N1_HOSTNAME (manager), $N2_HOSTNAME and $N3_HOSTNAME"
"$x" deploy ha "${t[@]}" --stack "$stack" --lb-port 18436 --instances 4 --nginx tuned-least-conn \
  --nofile 20000 --worker-rlimit-nofile 20000 --cpus 1 --memory 1g --images images/fixtures.yaml \
  --load-images --set STANDIN_ROOM_CLEANUP_MS=2000 --json >"$out/deploy.json"
top=${levels##*,}
log "prepare $top accounts with tokens"
"$x" prepare "${t[@]}" --stack "$stack" --accounts "$((top + 1))" --mint-tokens --bcrypt-cost 4 \
  --json >"$out/prepare.json"
log "bench: levels $levels, hold $hold, ramp $ramp"
"$x" bench "${t[@]}" --stack "$stack" --run-id swarm-bench --out "$out/bench" --tokens \
  --levels "$levels" --hold "$hold" --ramp "$ramp" --settle 30s --json >"$out/results.json" ||
  log "bench exited $?"
chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,1500 \
  --screenshot="$out/report.png" "file://$out/bench/report.html" >/dev/null 2>&1 || log "no screenshot"

python3 - "$out" <<'EOF'
import json, sys
out = sys.argv[1]
r = json.load(open(f"{out}/results.json"))
samples = [json.loads(l) for l in open(f"{out}/bench/timeline.jsonl")]
print(f"target {r['target']}; capacity {r['verdict']['capacity']}; {r['verdict']['headline']}")
lim = r["verdict"].get("limiting")
if lim:
    print(f"limiting: {lim['component']}: {lim['detail']}")
for l in r["levels"]:
    p = l["figures"].get("plateau") or {}
    s = l["span"]
    hold = [x for x in samples if s["hold_ms"] <= x["t_ms"] <= s["hold_end_ms"]]
    sums = [sum(i.get("connections") or 0 for i in x["instances"]) for x in hold]
    print(f"level {l['users']}: {'pass' if l['passed'] else 'FAIL'}; min open {p.get('min_open')} for "
          f"{p.get('hold_s')} s; instances' own sum over the hold {min(sums, default=0)}..{max(sums, default=0)} "
          f"in {len(hold)} samples; reasons {l['reasons']}")
top = r["levels"][-1]["span"]
hold = [x for x in samples if top["hold_ms"] <= x["t_ms"] <= top["hold_end_ms"]]
def p90(v):
    v = sorted(v)
    return v[min(len(v) - 1, int(0.9 * len(v)))] if v else None
nodes = sorted({n["node"] for x in hold for n in x.get("nodes", [])})
for n in nodes:
    busy = p90([h["host_cpu"]["busy_pct"] for x in hold for h in x["nodes"]
                if h["node"] == n and h.get("host_cpu")])
    cs = {}
    for x in hold:
        for c in x["containers"]:
            if c.get("node") == n and c.get("cpu_pct") is not None:
                cs.setdefault(c["service"], []).append(c["cpu_pct"])
    top_c = sorted(((p90(v), k) for k, v in cs.items()), reverse=True)[:2]
    print(f"node {n}: host busy p90 {busy:.0f} % (its own count); busiest "
          + ", ".join(f"{k} {v:.0f} % of a CPU" for v, k in top_c))
print(f"report: {out}/bench/report.html ({out}/report.png)")
EOF
