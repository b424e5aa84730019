#!/usr/bin/env bash
# A fake remote "system under test" for the tests (sandbox.md, "A remote host on one machine"): a network
# namespace with its own address, running three sshd and a second Docker engine loaded with the fixture images.
#
#   sut.sh up NAME INDEX   create SUT NAME on 10.199.INDEX.0/24 (INDEX 1..50), tearing down leftovers first
#   sut.sh down NAME       stop its daemons, remove the namespace, the veth pair and its folder
#   sut.sh env NAME        print the summary of an existing SUT again
#   sut.sh engine-stop NAME / engine-start NAME   stop its engine (a host's engine down), start it again
#
# `up` and `env` end with KEY=VALUE lines: ADDR, SSH_PORT, SSH_PORT_NOFWD, SSH_PORT_NOSFTP, KEY, WRONG_KEY,
# KNOWN_HOSTS, DOCKER_SOCK, DIR. SSH_PORT (2222) allows forwarding the engine's socket; SSH_PORT_NOFWD (2223) is
# the same server with `AllowStreamLocalForwarding no`; SSH_PORT_NOSFTP (2224) forwards but has no sftp
# subsystem (a hardened host). KEY logs in as root; WRONG_KEY is refused. DOCKER_SOCK is the
# SUT engine's socket, the same path on the host and on the SUT (the file system is shared).
#
# Layout: namespace exectl-NAME; veth exsutINDEX (host, 10.199.INDEX.1) <-> eth0 (namespace, 10.199.INDEX.2);
# state in /tmp/exectl-sut/NAME (short: unix socket paths must stay under 108 bytes). The SUT engine's default
# bridge is 10.200.INDEX.1/24 and its networks come from 10.201.0.0/16, apart from the host engine's.
#
# Environment: SUT_IMAGES="tag tag..." overrides the images loaded (default: images/fixtures.yaml's plus
# exectl-fixture/debian:bookworm; absent ones are skipped with a message). SUT_ROOT overrides /tmp/exectl-sut.
# SUT_NOFILE=N starts the SUT's engine with N open files (soft and hard; docker-proxy and containers inherit it);
# SUT_DAEMON_JSON='"userland-proxy": false' adds keys to its daemon.json. SUT_ENGINE=0 starts no engine (a
# generator host: sshd only). SUT_PRIVATE=DIR gives the sshd (and every login) a mount namespace of its own
# with a fresh tmpfs on DIR, so that files written there (exectl's binary in ~/.cache/exectl) are this host's.
# SUT_HOSTNAME=H gives the SUT a UTS namespace of its own (kept by a bind mount on DIR/uts) with hostname H,
# entered by its sshd and engine: engines that become swarm nodes need distinct names (tests/swarm/rig.sh).
# SUT_SOCKET_DIR=D gives the sshd a mount namespace of its own in which D is this SUT's folder, so that its
# engine answers on D/docker.sock for every login: nodes of one swarm, each its own engine at one path, as
# on real hosts (tests/swarm/rig.sh).
# SUT_LOAD=0 starts the engine but loads no image (the caller loads them). The engine inherits this script's
# environment (e.g. DOCKER_SERVICE_PREFER_OFFLINE_IMAGE=1).
# Needs root, iproute2, nsenter, openssh-server (scripts/packages.sh) and the host engine (scripts/dockerd.sh).
set -euo pipefail

ROOT=${SUT_ROOT:-/tmp/exectl-sut}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
SSH_PORT=2222
SSH_PORT_NOFWD=2223
SSH_PORT_NOSFTP=2224
TIMEOUT=${SUT_TIMEOUT:-60}

log() { echo "sut: $*" >&2; }
die() { log "$*"; exit 1; }

usage() {
  sed -n '5,8p' "$0" | sed 's/^# *//' >&2
  exit 2
}

check_name() {
  [[ $1 =~ ^[a-z0-9][a-z0-9-]{0,19}$ ]] || die "NAME must be 1-20 of [a-z0-9-], got '$1'"
}

# Paths of SUT $1, as globals.
paths() {
  NAME=$1
  NS=exectl-$NAME
  NSPATH=/run/netns/$NS
  DIR=$ROOT/$NAME
  SOCK=$DIR/docker.sock
  # Set by cmd_up when SUT_HOSTNAME asks for a UTS namespace.
  UTS=
}

in_ns() { nsenter --net="$NSPATH" ${UTS:+--uts="$UTS"} "$@"; }

# Is process $1 running? (A zombie is not: `kill -0` would say yes until init reaps it.)
alive() {
  [ -n "$1" ] && [ -r "/proc/$1/status" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

# Send SIGTERM to the processes in the pid files given, wait up to $1 seconds for them, then SIGKILL.
stop_pidfiles() {
  local wait=$1 pids=() pid f left
  shift
  for f in "$@"; do
    pid=$(cat "$f" 2>/dev/null || true)
    # Only ours: a stale pid file (the SUT folder outlived a reboot) may name someone else's process now.
    if alive "$pid" && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$DIR/"; then
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid")
    fi
  done
  for _ in $(seq 1 $((wait * 10))); do
    left=()
    for pid in "${pids[@]}"; do alive "$pid" && left+=("$pid"); done
    [ ${#left[@]} -eq 0 ] && return 0
    sleep 0.1
  done
  log "still alive after ${wait}s, killing: ${left[*]}"
  kill -KILL "${left[@]}" 2>/dev/null || true
  sleep 0.2
}

# Every mount point under $1, deepest first.
mounts_under() {
  awk -v d="$1" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r
}

# Start the engine from its script (cmd_up wrote it) and wait until it answers.
start_engine() {
  # setsid + nohup as in scripts/dockerd.sh: the engine outlives this script; no descriptor stays open
  # on the caller's pipes (a test reading this script's output would wait for ever otherwise).
  setsid nohup "$DIR/engine" </dev/null >>"$DIR/dockerd.log" 2>&1 &
  if ! wait_for "engine" docker -H "unix://$SOCK" version; then
    tail -n 30 "$DIR/dockerd.log" >&2 || true
    die "the SUT engine does not answer after ${TIMEOUT}s (log: $DIR/dockerd.log)"
  fi
}

# The engine stopped (SIGTERM, as a host's shutdown does; its containers stop with it), sshd left running.
cmd_engine_stop() {
  paths "$1"
  [ -x "$DIR/engine" ] || die "no SUT named $NAME (sut.sh up $NAME INDEX)"
  stop_pidfiles 30 "$DIR/docker.pid"
}

# The engine started again as `up` started it.
cmd_engine_start() {
  paths "$1"
  [ -x "$DIR/engine" ] || die "no SUT named $NAME (sut.sh up $NAME INDEX)"
  start_engine
}

cmd_down() {
  paths "$1"
  if [ -S "$SOCK" ] && docker -H "unix://$SOCK" version >/dev/null 2>&1; then
    # Kill the containers first: dockerd's own shutdown would give each one 15 seconds.
    local ids
    ids=$(docker -H "unix://$SOCK" ps -aq 2>/dev/null || true)
    if [ -n "$ids" ]; then
      # shellcheck disable=SC2086
      docker -H "unix://$SOCK" rm -f -v $ids >/dev/null 2>&1 || true
    fi
  fi
  # dockerd stops its containerd and waits for it: a few seconds.
  stop_pidfiles 30 "$DIR/sshd.pid" "$DIR/sshd-nofwd.pid" "$DIR/sshd-nosftp.pid" "$DIR/docker.pid"
  # Anything still running in the namespace (shims, containers' processes, docker-proxy) goes too.
  if [ -e "$NSPATH" ]; then
    local pids
    pids=$(ip netns pids "$NS" 2>/dev/null || true)
    if [ -n "$pids" ]; then
      # shellcheck disable=SC2086
      kill -KILL $pids 2>/dev/null || true
      sleep 0.2
    fi
    ip netns delete "$NS" 2>/dev/null || true
  fi
  if [ -f "$DIR/veth" ]; then
    ip link delete "$(cat "$DIR/veth")" 2>/dev/null || true
  fi
  if [ -d "$DIR" ]; then
    local m
    for m in $(mounts_under "$DIR"); do
      umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "cannot unmount $m"
    done
    # Containers' cgroups under the SUT engine's own parent (cgroup v1 and v2 layouts).
    find /sys/fs/cgroup -maxdepth 2 -type d -name "$NS" 2>/dev/null | while read -r cg; do
      find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
    done
    # Deleting the engine's thousands of files takes seconds on this disk (mounted with `discard`): move the
    # folder aside and delete it in the background, so that the name is free at once.
    local trash
    trash=$(mktemp -d "$ROOT/.trash-$NAME-XXXXXX")
    mv "$DIR" "$trash/"
    setsid nohup rm -rf "$trash" </dev/null >/dev/null 2>&1 &
  fi
}

# The images to load: $SUT_IMAGES, else images/fixtures.yaml's values and the debian base.
image_tags() {
  if [ -n "${SUT_IMAGES:-}" ]; then
    printf '%s\n' $SUT_IMAGES
    return
  fi
  sed -n 's/^[a-z_]*: *\([^ #]*\).*/\1/p' "$REPO/images/fixtures.yaml"
  echo exectl-fixture/debian:bookworm
}

write_sshd_config() {
  local port=$1 name=$2 forwarding=$3 sftp=$4 subsystem
  if [ "$sftp" = yes ]; then
    subsystem="# exectl uploads the bundle by SFTP, as to a stock Debian sshd.
Subsystem sftp internal-sftp"
  else
    subsystem="# No sftp subsystem, as on hardened hosts: exectl uploads by exec instead."
  fi
  cat >"$DIR/$name.conf" <<EOF
# sshd of SUT $NAME (tests/sut/sut.sh)
ListenAddress $ADDR
Port $port
HostKey $DIR/ssh_host_ed25519_key
PidFile $DIR/$name.pid
AuthorizedKeysFile $DIR/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
# The keys live under /tmp, which is world-writable.
StrictModes no
AllowTcpForwarding yes
AllowStreamLocalForwarding $forwarding
$subsystem
MaxStartups 100
MaxSessions 100
PrintMotd no
LogLevel VERBOSE
EOF
}

wait_for() {
  local what=$1
  shift
  for _ in $(seq 1 $((TIMEOUT * 10))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  return 1
}

port_open() { timeout 1 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; }

cmd_up() {
  local index=$2
  [[ $index =~ ^[0-9]+$ ]] && [ "$index" -ge 1 ] && [ "$index" -le 50 ] || die "INDEX must be 1..50, got '$index'"
  paths "$1"
  ADDR=10.199.$index.2
  local host_addr=10.199.$index.1 veth=exsut$index
  [ "$(id -u)" = 0 ] || die "needs root"
  for tool in ip nsenter dockerd docker /usr/sbin/sshd ssh-keygen; do
    command -v "$tool" >/dev/null || die "$tool not found (bash scripts/packages.sh)"
  done
  docker version >/dev/null 2>&1 || die "the host engine does not answer (bash scripts/dockerd.sh)"

  cmd_down "$NAME"
  # A SUT of another name on the same INDEX would own the veth; say so instead of breaking it.
  if ip link show "$veth" >/dev/null 2>&1; then
    die "$veth (INDEX $index) is in use by another SUT; pick another INDEX or run sut.sh down on it"
  fi
  mkdir -p "$DIR" /run/sshd
  # 711: sshd reads authorized_keys as the logging-in user, who may be other than root.
  chmod 711 "$DIR"
  echo "$veth" >"$DIR/veth"
  echo "$index" >"$DIR/index"

  log "network namespace $NS, $host_addr <-> $ADDR"
  ip netns add "$NS"
  ip link add "$veth" type veth peer name eth0 netns "$NS"
  ip addr add "$host_addr/24" dev "$veth"
  ip link set "$veth" up
  ip -n "$NS" link set lo up
  ip -n "$NS" addr add "$ADDR/24" dev eth0
  ip -n "$NS" link set eth0 up

  if [ -n "${SUT_HOSTNAME:-}" ]; then
    [[ $SUT_HOSTNAME =~ ^[a-z0-9][a-z0-9-]{0,62}$ ]] || die "SUT_HOSTNAME must be 1-63 of [a-z0-9-], got '$SUT_HOSTNAME'"
    log "hostname $SUT_HOSTNAME (UTS namespace $DIR/uts)"
    # Persistent like the network namespace, so that sshd and the engine, started apart, share it.
    # cmd_down unmounts it with the rest under DIR.
    UTS=$DIR/uts
    touch "$UTS"
    unshare --uts="$UTS" hostname "$SUT_HOSTNAME"
  fi

  log "keys and sshd on $ADDR:$SSH_PORT, :$SSH_PORT_NOFWD (no stream-local forwarding) and :$SSH_PORT_NOSFTP (no sftp)"
  ssh-keygen -q -t ed25519 -N '' -C "exectl-sut-$NAME-host" -f "$DIR/ssh_host_ed25519_key"
  ssh-keygen -q -t ed25519 -N '' -C "exectl-sut-$NAME-client" -f "$DIR/client_key"
  ssh-keygen -q -t ed25519 -N '' -C "exectl-sut-$NAME-wrong" -f "$DIR/wrong_key"
  cp "$DIR/client_key.pub" "$DIR/authorized_keys" && chmod 644 "$DIR/authorized_keys"
  local hostkey
  hostkey=$(cut -d' ' -f1,2 "$DIR/ssh_host_ed25519_key.pub")
  printf '[%s]:%s %s\n' "$ADDR" "$SSH_PORT" "$hostkey" "$ADDR" "$SSH_PORT_NOFWD" "$hostkey" \
    "$ADDR" "$SSH_PORT_NOSFTP" "$hostkey" >"$DIR/known_hosts"
  write_sshd_config "$SSH_PORT" sshd yes yes
  write_sshd_config "$SSH_PORT_NOFWD" sshd-nofwd no yes
  write_sshd_config "$SSH_PORT_NOSFTP" sshd-nosftp yes no
  for name in sshd sshd-nofwd sshd-nosftp; do
    /usr/sbin/sshd -t -f "$DIR/$name.conf"
    # sshd daemonizes itself once listening.
    if [ -n "${SUT_PRIVATE:-}" ]; then
      mkdir -p "$SUT_PRIVATE"
      # shellcheck disable=SC2016
      in_ns unshare --mount --propagation private sh -c 'mount -t tmpfs -o mode=0700 tmpfs "$1" && shift && exec "$@"' \
        sh "$SUT_PRIVATE" /usr/sbin/sshd -f "$DIR/$name.conf" -E "$DIR/$name.log" </dev/null >/dev/null 2>&1
    elif [ -n "${SUT_SOCKET_DIR:-}" ]; then
      mkdir -p "$SUT_SOCKET_DIR"
      # shellcheck disable=SC2016
      in_ns unshare --mount --propagation private sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' \
        sh "$DIR" "$SUT_SOCKET_DIR" /usr/sbin/sshd -f "$DIR/$name.conf" -E "$DIR/$name.log" </dev/null >/dev/null 2>&1
    else
      in_ns /usr/sbin/sshd -f "$DIR/$name.conf" -E "$DIR/$name.log" </dev/null >/dev/null 2>&1
    fi
  done
  if [ "${SUT_ENGINE:-1}" = 0 ]; then
    for port in $SSH_PORT $SSH_PORT_NOFWD $SSH_PORT_NOSFTP; do
      wait_for "sshd" port_open "$ADDR" "$port" || die "sshd does not accept on $ADDR:$port (logs: $DIR/sshd*.log)"
    done
    summary
    return
  fi

  log "second engine on $SOCK"
  mkdir -p "$DIR/data" "$DIR/run"
  # A config file of its own (/etc/docker/daemon.json is the host engine's). Engines before 23 take their
  # ID from /etc/docker/key.json, shared with the host engine; give this one its own key (so its own ID).
  local major
  major=$(dockerd --version | sed -n 's/^Docker version \([0-9]*\)\..*/\1/p')
  # SUT_DAEMON_JSON: more keys for it, a JSON object's members ('"userland-proxy": false').
  local keys=${SUT_DAEMON_JSON:-}
  if [ -n "$major" ] && [ "$major" -lt 23 ]; then
    keys="\"deprecated-key-path\": \"$DIR/key.json\"${keys:+, $keys}"
  fi
  printf '{%s}\n' "$keys" >"$DIR/daemon.json"
  # SUT_NOFILE: the engine's open-files limit (soft and hard), below this shell's: docker-proxy and the
  # containers inherit it (tests of what gives out first).
  local nofile=${SUT_NOFILE:-}
  [ -z "$nofile" ] || [[ $nofile =~ ^[0-9]+$ ]] || die "SUT_NOFILE must be a number, got '$nofile'"
  # The engine's command line, kept as a script of its own so that `engine-start` runs the same one again
  # (with the environment it was started with: DOCKER_SERVICE_PREFER_OFFLINE_IMAGE for a swarm node).
  {
    echo '#!/usr/bin/env bash'
    local var
    for var in DOCKER_SERVICE_PREFER_OFFLINE_IMAGE; do
      [ -z "${!var:-}" ] || printf 'export %s=%q\n' "$var" "${!var}"
    done
    printf 'exec prlimit %s -- nsenter --net=%q %s dockerd' "${nofile:+--nofile=$nofile:$nofile}" "$NSPATH" "${UTS:+--uts=$UTS}"
    printf ' %q' --config-file "$DIR/daemon.json" --data-root "$DIR/data" --exec-root "$DIR/run" \
      --pidfile "$DIR/docker.pid" -H "unix://$SOCK" --containerd-namespace "$NS" \
      --containerd-plugins-namespace "$NS-plugins" --cgroup-parent "/$NS" --bip "10.200.$index.1/24" \
      --default-address-pool "base=10.201.0.0/16,size=24" --iptables=true
    echo
  } >"$DIR/engine"
  chmod 700 "$DIR/engine"
  start_engine
  for port in $SSH_PORT $SSH_PORT_NOFWD $SSH_PORT_NOSFTP; do
    wait_for "sshd" port_open "$ADDR" "$port" || die "sshd does not accept on $ADDR:$port (logs: $DIR/sshd*.log)"
  done
  if [ "${SUT_LOAD:-1}" = 0 ]; then
    summary
    return
  fi

  local tags=() tag
  for tag in $(image_tags); do
    if docker image inspect "$tag" >/dev/null 2>&1; then
      tags+=("$tag")
    else
      log "image $tag is not on the host engine (bash images/build); skipped"
    fi
  done
  if [ ${#tags[@]} -gt 0 ]; then
    log "loading ${tags[*]}"
    docker save "${tags[@]}" | docker -H "unix://$SOCK" load -q >/dev/null
  fi
  summary
}

summary() {
  cat <<EOF
ADDR=$ADDR
SSH_PORT=$SSH_PORT
SSH_PORT_NOFWD=$SSH_PORT_NOFWD
SSH_PORT_NOSFTP=$SSH_PORT_NOSFTP
KEY=$DIR/client_key
WRONG_KEY=$DIR/wrong_key
KNOWN_HOSTS=$DIR/known_hosts
DOCKER_SOCK=$SOCK
DIR=$DIR
EOF
}

cmd_env() {
  paths "$1"
  [ -f "$DIR/index" ] && [ -e "$NSPATH" ] || die "no SUT named $NAME (sut.sh up $NAME INDEX)"
  ADDR=10.199.$(cat "$DIR/index").2
  summary
}

case "${1:-}" in
  up)
    [ $# -eq 3 ] || usage
    check_name "$2"
    cmd_up "$2" "$3"
    ;;
  down)
    [ $# -eq 2 ] || usage
    check_name "$2"
    cmd_down "$2"
    ;;
  env)
    [ $# -eq 2 ] || usage
    check_name "$2"
    cmd_env "$2"
    ;;
  engine-stop | engine-start)
    [ $# -eq 2 ] || usage
    check_name "$2"
    "cmd_${1//-/_}" "$2"
    ;;
  *) usage ;;
esac
