#!/usr/bin/env bash
# Benchmark: `exectl status --json` latency on ha with 4 instances (every service inspected, CPU sampled,
# limits read back, each instance's WebSocket counts queried), next to `docker stats --no-stream` of the
# same containers (the baseline: the engine's own one-shot view, with less in it). Target: under 500 ms.
# Also the same status over SSH (--target ssh://root@127.0.0.1:PORT, a throwaway sshd on loopback serving
# this engine's socket), so the cost of the SSH link is measured on the same stack in the same run.
# Usage: bash benches/status_latency.sh [RUNS]   (needs scripts/setup.sh first)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
cargo build --release -q -p exectl
exectl=$PWD/target/release/exectl
state=$(mktemp -d); export EXECTL_STATE_DIR=$state
sshd_dir=$(mktemp -d)
cleanup() {
  "$exectl" teardown --stack bench-status --purge >/dev/null 2>&1 || true
  [ -f "$sshd_dir/pid" ] && kill "$(cat "$sshd_dir/pid")" 2>/dev/null || true
  rm -rf "$state" "$sshd_dir"
}
trap cleanup EXIT
"$exectl" deploy ha --stack bench-status --lb-port 18490 --instances 4 --nofile 20000 --worker-rlimit-nofile 20000 \
  --worker-connections 10000 --cpus 1 --memory 512m --health-interval 1s --images images/fixtures.yaml --json >/dev/null
containers=$(docker ps -q --filter label=exectl.stack=bench-status)
# The loopback sshd, and the stack's local state under the SSH target's key (same engine, other path).
port=18422
ssh-keygen -q -t ed25519 -N '' -f "$sshd_dir/host_key"; ssh-keygen -q -t ed25519 -N '' -f "$sshd_dir/client"
cp "$sshd_dir/client.pub" "$sshd_dir/authorized_keys"; mkdir -p /run/sshd
printf '%s\n' "ListenAddress 127.0.0.1" "Port $port" "HostKey $sshd_dir/host_key" "PidFile $sshd_dir/pid" \
  "AuthorizedKeysFile $sshd_dir/authorized_keys" "PermitRootLogin prohibit-password" "UsePAM no" \
  "StrictModes no" "Subsystem sftp internal-sftp" >"$sshd_dir/sshd_config"
/usr/sbin/sshd -f "$sshd_dir/sshd_config"
cp -r "$state/local" "$state/ssh-root@127.0.0.1-$port"
ssh_target=(--target "ssh://root@127.0.0.1:$port" --identity "$sshd_dir/client"
  --known-hosts "$sshd_dir/known_hosts" --accept-new-host-key)
ms() { local t=$(date +%s%N); "$@" >/dev/null; echo $(( ($(date +%s%N) - t) / 1000000 )); }
e=(); b=(); s=()
for _ in $(seq "$runs"); do
  e+=("$(ms "$exectl" status --stack bench-status --json)")
  s+=("$(ms "$exectl" status --stack bench-status --json "${ssh_target[@]}")")
  b+=("$(ms docker stats --no-stream $containers)")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
max() { printf '%s\n' "$@" | sort -n | tail -1; }
em=$(median "${e[@]}"); bm=$(median "${b[@]}"); sm=$(median "${s[@]}")
echo "status latency, ha with 4 instances (7 containers), $runs runs, $(date -u +%F)"
echo "exectl status --json:     median ${em} ms, max $(max "${e[@]}") ms (target < 500 ms)"
echo "docker stats --no-stream: median ${bm} ms, max $(max "${b[@]}") ms"
echo "exectl status over SSH:   median ${sm} ms, max $(max "${s[@]}") ms (connect included)"
echo "ratio exectl / docker stats: $(echo "scale=2; $em / $bm" | bc -l)"
echo "ratio over SSH / local:      $(echo "scale=2; $sm / $em" | bc -l)"
