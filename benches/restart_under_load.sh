#!/usr/bin/env bash
# Benchmark: restarts under load (#39 part 3). One idle level of USERS on minted tokens, held 40 s, on
# ha ×2 (nginx least_conn, the upstream's max_fails=3 fail_timeout=30s) and on single (Traefik), with
# `bench --fault` 10 s into the hold; the users reconnect as the real client does (y-websocket's
# backoff). Baseline: the same level with no fault, in the same run. Prints, per fault, the sockets
# dropped, how long they took to come back (p50 / p95 / max), those not back, the dials that failed on
# the way, and where the users were at the hold's end. The rolling redeploy (a new variable in each
# instance, nginx reloaded after each) and the restart are also run with --relogin: the users log in
# again on their way back (no minted tokens), and the line adds those logins and their latency.
# Usage: bash benches/restart_under_load.sh [USERS]   (default 1000; needs the engine and fixture images)
# BENCH_PREFIX (default "bench-") starts the stack names, BENCH_PORT (default 18297) and BENCH_PORT+1
# are their ports.
set -euo pipefail
cd "$(dirname "$0")/.."
users=${1:-1000}
ha=${BENCH_PREFIX:-bench-}restart-ha
single=${BENCH_PREFIX:-bench-}restart-single
port=${BENCH_PORT:-18297}
cargo build -q -p exectl
exectl=${CARGO_TARGET_DIR:-$PWD/target}/debug/exectl
state=$(mktemp -d); export EXECTL_STATE_DIR=$state
trap 'for s in "$ha" "$single"; do "$exectl" teardown --stack "$s" --purge >/dev/null 2>&1 || true; done; rm -rf "$state"' EXIT
limits=(--nofile 20000 --worker-rlimit-nofile 20000 --worker-connections 10000)
"$exectl" deploy ha --stack "$ha" --lb-port "$port" "${limits[@]}" --set STANDIN_ROOM_CLEANUP_MS=500 \
  --images images/fixtures.yaml --json >/dev/null
"$exectl" deploy single --db sqlite --stack "$single" --http-port "$((port + 1))" --nofile 20000 \
  --set STANDIN_ROOM_CLEANUP_MS=500 --images images/fixtures.yaml --json >/dev/null
for s in "$ha" "$single"; do
  "$exectl" prepare --stack "$s" --accounts "$users" --bcrypt-cost 4 --mint-tokens --json >/dev/null
done

# One bench: $1 stack, $2 label, the rest bench flags. Prints its line.
run() {
  local stack=$1 label=$2; shift 2
  local auth=(--tokens)
  [ -n "${relogin:-}" ] && auth=(--relogin)
  "$exectl" bench --stack "$stack" --scenario idle --levels "$users" "${auth[@]}" --hold "${hold:-40s}" --ramp 10s \
    --settle 45s --run-id "r-$label" --json "$@" >/dev/null 2>&1 || true
  python3 - "$state/benches/r-$label" "$label" <<'PY'
import json, sys
d, label = sys.argv[1:]
r = json.load(open(f"{d}/results.json"))
l = r["levels"][0]; f = l["figures"]
fault = f.get("fault")
# Where the users were at the hold's end: each instance's own count in the last sample of the hold.
end = l["span"]["hold_end_ms"]
last = None
for line in open(f"{d}/timeline.jsonl"):
    s = json.loads(line)
    if s["t_ms"] <= end:
        last = s
where = ", ".join(f"{i['service']} {i.get('connections')}" for i in (last or {}).get("instances", []))
if not fault:
    print(f"{label:<22} {'pass' if l['passed'] else 'FAIL'}  held {f['held']}/{f['users']}, no fault; at the hold's end {where}")
    sys.exit()
rec = fault["recovery"]
ms = lambda k: f"{rec[k] / 1000:.1f} s" if rec.get(k) is not None else "-"
failed = sum(rec["failed_dials"].values())
kinds = ", ".join(f"{k} {n}" for k, n in rec["failed_dials"].items()) or "none"
took = f" in {fault['took_s']:.1f} s" if fault.get("took_s") is not None else ""
lg = rec.get("relogins")
logins = (f"; {lg['ok']} logins on the way back (p50 {lg.get('p50_ms', 0):.0f} ms, p95 {lg.get('p95_ms', 0):.0f} ms, "
          f"max {lg.get('max_ms', 0):.0f} ms), {sum(lg['failed'].values())} failed {lg['failed'] or ''}") if lg else ""
error = f" (not whole: {fault['error']})" if fault.get("error") else ""
print(f"{label:<22} {'pass' if l['passed'] else 'FAIL'}  {fault['planned']}{took}{error}: {rec['drops']} drops from {rec['users_dropped']} users, "
      f"back p50 {ms('back_p50_ms')} p95 {ms('back_p95_ms')} max {ms('back_max_ms')}, not back {rec['not_back']}, "
      f"dials failed {failed} ({kinds}){logins}; at the hold's end {where}")
PY
}
run "$ha" ha-baseline
run "$ha" ha-restart-app-1 --fault restart:app-1@10s
run "$ha" ha-restart-nginx --fault restart:nginx@10s
relogin=1 run "$ha" ha-restart-app-1-relogin --fault restart:app-1@10s
# A redeploy, as a roll, waits for each new instance's healthcheck (every 30 s, as the real image's).
hold=90s run "$ha" ha-redeploy --fault redeploy:EXECTL_RELEASE=2@10s
relogin=1 hold=90s run "$ha" ha-redeploy-relogin --fault redeploy:EXECTL_RELEASE=3@10s
# A roll waits for each instance's healthcheck (every 30 s, as the real image's) before the next.
hold=90s run "$ha" ha-roll --fault roll@10s
run "$single" single-baseline
run "$single" single-restart-app --fault restart:app@10s
