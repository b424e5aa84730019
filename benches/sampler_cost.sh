#!/usr/bin/env bash
# Benchmark: what exectl bench's SUT sampler costs the SUT at 1 Hz on ha ×4, locally and over SSH (a fake
# remote SUT: tests/sut/sut.sh), at 40 users and locally also at 1500 (its open-files count grows with the
# sockets), next to the named baseline: the same figures read by the limits script
# (`cat`/`sed` per file, what `status` runs), measured in the same run.
# Usage: bash benches/sampler_cost.sh [HOLD]   (root; needs scripts/setup.sh first; HOLD default 60s)
set -euo pipefail
cd "$(dirname "$0")/.."
hold=${1:-60s}
cargo build --release -q -p exectl
exectl=$PWD/target/release/exectl
state=$(mktemp -d); export EXECTL_STATE_DIR=$state
sut=bench-sampler
cleanup() {
  "$exectl" teardown --stack bench-sampler --purge >/dev/null 2>&1 || true
  [ -n "${SUT_ARGS:-}" ] && "$exectl" teardown --stack bench-sampler --purge $SUT_ARGS >/dev/null 2>&1 || true
  bash tests/sut/sut.sh down "$sut" >/dev/null 2>&1 || true
  rm -rf "$state"
}
trap cleanup EXIT
ha=(ha --stack bench-sampler --instances 4 --cpus 0.5 --memory 256m --nofile 20000 --worker-rlimit-nofile 20000
    --worker-connections 10000 --images images/fixtures.yaml --health-interval 1s --set STANDIN_ROOM_CLEANUP_MS=500)

# The share of one core a run used: CPU seconds over wall seconds.
pct() { echo "scale=2; 100 * $1 / $2" | bc -l; }

setup() {
  local accounts=$1; shift
  "$exectl" deploy "${ha[@]}" --lb-port 18295 "$@" >/dev/null
  "$exectl" prepare --stack bench-sampler --accounts "$accounts" --bcrypt-cost 4 "$@" >/dev/null
}

# Bench one level of USERS for HOLD at 1 Hz; print the sampler's own figures and the most open files it
# counted at once (its glob of /proc/PID/fd grows with the sockets held).
measure() {
  local where=$1 users=$2; shift 2
  "$exectl" bench --stack bench-sampler --levels "$users" --hold "$hold" --ramp 10s --settle 5s --sample 1s \
    --out "$state/$where-$users" --json "$@" > "$state/$where-$users.json" || true
  python3 - "$state/$where-$users.json" "$state/$where-$users/timeline.jsonl" "$where" "$users" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["sampler"]
containers = len(r["images"])
files = max((sum(c.get("open_files") or 0 for c in json.loads(l)["containers"]) for l in open(sys.argv[2])), default=0)
print(f"{sys.argv[3]:<6} {sys.argv[4]:>5} users, {s['samples']:>4} samples of {containers} containers over {r['duration_s']:.0f} s "
      f"(open files counted: up to {files} at once): host script CPU {s['sut_cpu_pct']:.2f} % of one core, "
      f"{s['mean_sample_ms']:.0f} ms per sample (wall, probes included), {s['host_scripts']} host script(s)")
for l in r["levels"]:
    f = l["figures"]
    print(f"       the level: held {f['held']}/{f['users']}, {'passed' if l['passed'] else 'failed: ' + '; '.join(l['reasons'])}")
PY
}

echo "sampler cost, ha ×4 (+ nginx, postgres, redis), 1 Hz, hold $hold, $(date -u '+%F %H:%M') UTC, load $(cut -d' ' -f1 /proc/loadavg)"
setup 1500
measure local 40
measure local 1500

# Baseline, same containers: the limits script (a process per file read) 60 times, as at 1 Hz for a minute.
pids=$(docker ps -q --filter label=exectl.stack=bench-sampler | xargs docker inspect -f '{{.State.Pid}}' | tr '\n' ' ')
script=$(cat <<'SH'
for p in "$@"; do
  cat /proc/$p/limits >/dev/null
  c=$(sed -n 's/^[0-9]*:\(cpu,cpuacct\|cpu\):\(.*\)/\2/p' /proc/$p/cgroup | head -n1)
  m=$(sed -n 's/^[0-9]*:memory:\(.*\)/\1/p' /proc/$p/cgroup | head -n1)
  cat /sys/fs/cgroup/cpu$c/cpu.cfs_quota_us /sys/fs/cgroup/cpu$c/cpu.cfs_period_us /sys/fs/cgroup/memory$m/memory.limit_in_bytes >/dev/null
  cat /sys/fs/cgroup/cpuacct$c/cpuacct.usage >/dev/null; sed -n 's/^rss //p' /sys/fs/cgroup/memory$m/memory.stat >/dev/null
  cat /sys/fs/cgroup/memory$m/memory.usage_in_bytes >/dev/null; sed -n 's/^total_inactive_file //p' /sys/fs/cgroup/memory$m/memory.stat >/dev/null
done
SH
)
t0=$(python3 -c 'import resource; r=resource.getrusage(resource.RUSAGE_CHILDREN); print(r.ru_utime+r.ru_stime)')
base=$(python3 - "$script" $pids <<'PY'
import resource, subprocess, sys
script, pids = sys.argv[1], sys.argv[2:]
for _ in range(60):
    subprocess.run(["sh", "-c", script, "sh", *pids], check=False)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(r.ru_utime + r.ru_stime)
PY
)
echo "limits script (baseline): $(pct "$base" 60) % of one core at 1 Hz (the same containers, a process per file)"
"$exectl" teardown --stack bench-sampler --purge >/dev/null

# Over SSH: the sampler's host commands run in sshd sessions on the SUT; their CPU (and the sessions')
# shows in the SUT sshd's reaped children.
env=$(bash tests/sut/sut.sh up "$sut" 45 | grep -E '^[A-Z_]+=')
eval "$env"
SUT_ARGS="--target ssh://root@$ADDR:$SSH_PORT --identity $KEY --known-hosts $KNOWN_HOSTS --docker-socket $DOCKER_SOCK"
sshd=$(cat "$DIR/sshd.pid")
children() { awk '{print ($16 + $17) / 100}' "/proc/$sshd/stat"; }
# shellcheck disable=SC2086
setup 40 $SUT_ARGS
c0=$(children); t0=$(date +%s.%N)
# shellcheck disable=SC2086
measure ssh 40 $SUT_ARGS
t1=$(date +%s.%N)
# A session's CPU reaches the listener's count when its process is reaped: wait for exectl's to end.
for _ in $(seq 1 100); do [ -z "$(pgrep -P "$sshd")" ] && break; sleep 0.1; done
left=$(pgrep -c -P "$sshd" || true)
c1=$(children)
[ "$left" = 0 ] || echo "ssh    warning: $left sshd session(s) still open; their CPU is not counted below"
echo "ssh    the SUT's sshd sessions during the bench (commands, exec channels, forwards): $(pct "$(echo "$c1 - $c0" | bc -l)" "$(echo "$t1 - $t0" | bc -l)") % of one core"

# Baseline over SSH, same SUT and containers: a session per sample (what the sampler did before it kept
# one script running), running the limits script, 30 times, as at 1 Hz for 30 s.
sut_docker=(docker -H "unix://$DOCKER_SOCK")
pids=$("${sut_docker[@]}" ps -q --filter label=exectl.stack=bench-sampler | xargs "${sut_docker[@]}" inspect -f '{{.State.Pid}}' | tr '\n' ' ')
c0=$(children)
for _ in $(seq 1 30); do
  # shellcheck disable=SC2086
  ssh -q -i "$KEY" -p "$SSH_PORT" -o BatchMode=yes -o UserKnownHostsFile="$KNOWN_HOSTS" "root@$ADDR" \
    sh -s -- $pids <<<"$script" >/dev/null
done
for _ in $(seq 1 100); do [ -z "$(pgrep -P "$sshd")" ] && break; sleep 0.1; done
c1=$(children)
echo "ssh    baseline, a session per sample running the limits script: $(pct "$(echo "$c1 - $c0" | bc -l)" 30) % of one core at 1 Hz"
