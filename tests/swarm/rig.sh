#!/usr/bin/env bash
# A real 3-node Docker Swarm on this machine, for the tests of deploying onto a swarm (issue 24): three fake
# remote hosts of tests/sut/sut.sh (each a network namespace with its own address, sshd and engine), routed
# to each other through the host, made one swarm: n1 manager, n2 and n3 workers.
#
#   rig.sh up [NAME]     create swarm NAME (default: swarm), tearing down leftovers of NAME first
#   rig.sh down [NAME]   remove its services, leave the swarm, stop its daemons, remove everything it made
#   rig.sh env [NAME]    print the summary of an existing swarm again
#   rig.sh engine-stop NAME K / engine-start NAME K   stop node K's engine (a host's engine down), start it
#
# `up` and `env` end with KEY=VALUE lines (no spaces: `eval` works): NAME, NODES (3), MANAGER_ADDR,
# MANAGER_SOCK, NODE_DOCKER_SOCKET (every node's engine, as its SSH logins see it); per node K in 1..3: NK_ADDR, NK_HOSTNAME, NK_ROLE (manager, worker), NK_NODE_ID,
# NK_LABELS, NK_DOCKER_SOCK, NK_DIR; then SSH_PORT, SSH_PORT_NOFWD, SSH_PORT_NOSFTP (as sut.sh's, on every
# node's address), KEY (logs in as root on every node), WRONG_KEY (refused everywhere), KNOWN_HOSTS (every
# node, every port), POOL (the overlay networks' addresses), DIR. A node's engine socket is the same path
# on the host and on the node; only the manager's socket answers for swarm objects (nodes, services).
#
# Layout: node K is sut.sh's SUT NAME-nK on INDEX BASE+K-1 (BASE: SWARM_INDEX, default 47; the tests use
# 9, 21, 22, 24, 25, 30, 44-46 and the benches 36-38 (benches/swarm_bench.sh), 42 and 45): namespace
# exectl-NAME-nK, address 10.199.INDEX.2, veth exsutINDEX, hostname NAME-nK (the swarm's node name), its
# folder /tmp/exectl-swarm/NAME/NAME-nK.
# Labels: exectl.node=nK on every node, exectl.role=app on the workers. Overlay networks come from
# 10.202.0.0/16, apart from the nodes (10.199), their engines' bridges (10.200, 10.201) and the host's.
# Each namespace only has its /24 to the host: a route in each to the other two, and DOCKER-USER rules
# accepting between the three veths (the host engine's FORWARD policy is DROP), commented exectl-swarm-NAME.
# Swarm traffic between nodes: TCP 2377, TCP+UDP 7946, UDP 4789 (vxlan).
#
# What the engines are started with, and why (shared/swarm.md, measured): DOCKER_SERVICE_PREFER_OFFLINE_IMAGE=1
# (otherwise each task start first waits ~20 s for a registry that cannot be reached), distinct hostnames
# (otherwise every node is named after this machine), nofile 20000 (the hard limit here: a task's --ulimit
# nofile above it fails to start). No IPVS here: services must use endpoint mode dnsrr and host-mode ports;
# CLI users pass --no-resolve-image (stack deploy: --resolve-image never).
#
# Environment: SWARM_INDEX=BASE (1..48) moves the nodes' subnets; SWARM_ROOT overrides /tmp/exectl-swarm;
# SWARM_IMAGES="tag tag..." overrides the images loaded into every node (default: sut.sh's, i.e.
# images/fixtures.yaml's plus exectl-fixture/debian:bookworm; absent ones are skipped with a message);
# SWARM_NOFILE=N the engines' open files (default 20000); SWARM_KEEP=1 keeps a failed `up` for a look.
# Needs what sut.sh needs, iptables, and the host engine with the fixture images (bash images/build.sh).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
SUT=$REPO/tests/sut/sut.sh
ROOT=${SWARM_ROOT:-/tmp/exectl-swarm}
BASE=${SWARM_INDEX:-47}
NOFILE=${SWARM_NOFILE:-20000}
POOL=10.202.0.0/16
TIMEOUT=60
# Where every node's engine answers for its SSH logins (sut.sh's SUT_SOCKET_DIR): one --docker-socket for all.
NODE_DIR=/run/exectl-swarm-node

log() { echo "swarm: $*" >&2; }
die() { log "$*"; exit 1; }

usage() {
  sed -n '6,9p' "$0" | sed 's/^# *//' >&2
  exit 2
}

check_name() {
  # sut.sh takes node names of up to 20 characters: NAME-nK.
  [[ $1 =~ ^[a-z0-9][a-z0-9-]{0,16}$ ]] || die "NAME must be 1-17 of [a-z0-9-], got '$1'"
}

# Paths of swarm $1, as globals. The node folders live inside DIR (sut.sh's SUT_ROOT=DIR), so that one
# folder holds the whole rig.
paths() {
  NAME=$1
  DIR=$ROOT/$NAME
  TAG=exectl-swarm-$NAME
}

node_name() { echo "$NAME-n$1"; }
node_ns() { echo "exectl-$NAME-n$1"; }
node_sock() { echo "$DIR/$NAME-n$1/docker.sock"; }
node_index() { echo $((BASE + $1 - 1)); }
node_addr() { echo "10.199.$(node_index "$1").2"; }
# The docker CLI on node K's engine.
dk() {
  local k=$1
  shift
  docker -H "unix://$(node_sock "$k")" "$@"
}
answers() { [ -S "$(node_sock "$1")" ] && timeout 10 docker -H "unix://$(node_sock "$1")" version >/dev/null 2>&1; }

sut() {
  SUT_ROOT=$DIR bash "$SUT" "$@"
}

wait_for() {
  for _ in $(seq 1 $((TIMEOUT * 10))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  return 1
}

# Our DOCKER-USER (or FORWARD) rules, as `iptables -S` prints them.
our_rules() {
  local chain
  for chain in DOCKER-USER FORWARD; do
    iptables -w -S "$chain" 2>/dev/null | grep -F -- "--comment $TAG " || true
  done
}

cmd_down() {
  paths "$1"
  # Services first (their tasks stop), then the swarm: workers leave while the manager is still there to
  # tell, the manager last (--force: it is the last manager). Engines that do not answer are skipped.
  if answers 1; then
    local services
    services=$(dk 1 service ls -q 2>/dev/null || true)
    if [ -n "$services" ]; then
      # shellcheck disable=SC2086
      dk 1 service rm $services >/dev/null 2>&1 || true
    fi
  fi
  local k pids=()
  for k in 2 3; do
    if answers "$k"; then
      timeout 20 docker -H "unix://$(node_sock "$k")" swarm leave --force >/dev/null 2>&1 &
      pids+=($!)
    fi
  done
  for k in "${pids[@]}"; do wait "$k" || true; done
  if answers 1; then
    timeout 20 docker -H "unix://$(node_sock 1)" swarm leave --force >/dev/null 2>&1 || true
  fi
  # The three hosts at once: sut.sh down removes the containers, stops sshd and the engine by pid (the
  # engine its containerd) and waits, kills what else runs in the namespace, deletes it with its veth.
  # It finds the namespace by name, so this works without DIR too.
  pids=()
  for k in 1 2 3; do
    sut down "$(node_name "$k")" >/dev/null &
    pids+=($!)
  done
  local failed=0
  for k in "${pids[@]}"; do wait "$k" || failed=1; done
  [ "$failed" = 0 ] || log "a sut.sh down failed (see above); going on"
  local rule
  while read -r rule; do
    [ -n "$rule" ] || continue
    # `-A CHAIN ...` -> `-D CHAIN ...`; the comment has no spaces, so word splitting is right.
    # shellcheck disable=SC2086
    iptables -w -D ${rule#-A } || log "cannot delete iptables rule: $rule"
  done < <(our_rules)
  # sut.sh moved each node's folder aside and deletes it in the background; delete the lot here and wait,
  # so that nothing is left when down returns (rm -rf tolerates the other rm removing files beside it).
  if [ -e "$DIR" ]; then
    rm -rf "$DIR" 2>/dev/null || true
    [ ! -e "$DIR" ] || rm -rf "$DIR"
  fi
  # The last swarm gone: the empty folder the nodes' logins mounted their own on.
  if rmdir "$ROOT" 2>/dev/null; then rmdir "$NODE_DIR" 2>/dev/null || true; fi
}

# The images to load: $SWARM_IMAGES, else images/fixtures.yaml's values and the debian base (as sut.sh).
image_tags() {
  if [ -n "${SWARM_IMAGES:-}" ]; then
    printf '%s\n' $SWARM_IMAGES
    return
  fi
  sed -n 's/^[a-z_]*: *\([^ #]*\).*/\1/p' "$REPO/images/fixtures.yaml"
  echo exectl-fixture/debian:bookworm
}

# One `docker save` streamed into the three engines at once (tee into two fifos): the host engine reads its
# layers once, and the nodes unpack side by side.
load_images() {
  local tags=() tag
  for tag in $(image_tags); do
    if docker image inspect "$tag" >/dev/null 2>&1; then
      tags+=("$tag")
    else
      log "image $tag is not on the host engine (bash images/build.sh); skipped"
    fi
  done
  [ ${#tags[@]} -gt 0 ] || return 0
  log "loading ${tags[*]} into the 3 nodes"
  rm -f "$DIR/load-n2" "$DIR/load-n3"
  mkfifo "$DIR/load-n2" "$DIR/load-n3"
  dk 2 load -q <"$DIR/load-n2" >/dev/null &
  local p2=$!
  dk 3 load -q <"$DIR/load-n3" >/dev/null &
  local p3=$!
  local rc=0
  docker save "${tags[@]}" | tee "$DIR/load-n2" "$DIR/load-n3" | dk 1 load -q >/dev/null || rc=1
  wait "$p2" || rc=1
  wait "$p3" || rc=1
  rm -f "$DIR/load-n2" "$DIR/load-n3"
  return "$rc"
}

cmd_up() {
  paths "$1"
  [[ $BASE =~ ^[0-9]+$ ]] && [ "$BASE" -ge 1 ] && [ "$BASE" -le 48 ] || die "SWARM_INDEX must be 1..48, got '$BASE'"
  [[ $NOFILE =~ ^[0-9]+$ ]] || die "SWARM_NOFILE must be a number, got '$NOFILE'"
  [ "$(id -u)" = 0 ] || die "needs root"
  for tool in iptables mkfifo tee; do
    command -v "$tool" >/dev/null || die "$tool not found"
  done
  docker version >/dev/null 2>&1 || die "the host engine does not answer (bash scripts/dockerd.sh)"
  # The host engine turns forwarding on; without it nothing routes between the namespaces. Not ours to set.
  [ "$(cat /proc/sys/net/ipv4/ip_forward)" = 1 ] || die "net.ipv4.ip_forward is 0 on this host: the nodes cannot reach each other"

  local t0 k j
  t0=$(date +%s.%N)
  cmd_down "$NAME"
  mkdir -p "$DIR"
  if [ "${SWARM_KEEP:-0}" != 1 ]; then
    # Leave nothing half made behind (the tests cannot clean what they were not told about).
    trap 'rc=$?; if [ $rc -ne 0 ]; then log "up failed; tearing down (SWARM_KEEP=1 keeps it)"; cmd_down "$NAME"; fi' EXIT
  fi

  # The three hosts at once (each ~1-2 s, mostly waiting): sut.sh with a hostname, the open-files limit,
  # the offline-image preference (inherited by the engine) and no image loading (load_images does it once).
  log "nodes $(node_name 1) $(node_name 2) $(node_name 3) on 10.199.$(node_index 1)-$(node_index 3).2"
  local pids=()
  for k in 1 2 3; do
    SUT_HOSTNAME=$(node_name "$k") SUT_NOFILE=$NOFILE SUT_LOAD=0 SUT_SOCKET_DIR=$NODE_DIR \
      DOCKER_SERVICE_PREFER_OFFLINE_IMAGE=1 \
      sut up "$(node_name "$k")" "$(node_index "$k")" >"$DIR/n$k.up" 2>&1 &
    pids+=($!)
  done
  local failed=
  for k in 1 2 3; do
    wait "${pids[$((k - 1))]}" || failed="$failed n$k"
  done
  if [ -n "$failed" ]; then
    for k in $failed; do
      log "sut.sh up of $k failed:"
      sed 's/^/  /' "$DIR/$k.up" >&2 || true
    done
    exit 1
  fi

  # Routes through the host: each namespace to the other two /24s by its veth's host end; DOCKER-USER comes
  # first in FORWARD and the host engine leaves it alone. -w: the nodes' engines take the same xtables lock
  # (a file, shared across network namespaces).
  local chain=DOCKER-USER
  iptables -w -S DOCKER-USER >/dev/null 2>&1 || chain=FORWARD
  for k in 1 2 3; do
    for j in 1 2 3; do
      [ "$k" = "$j" ] && continue
      ip -n "$(node_ns "$k")" route add "10.199.$(node_index "$j").0/24" via "10.199.$(node_index "$k").1"
      iptables -w -I "$chain" -i "exsut$(node_index "$k")" -o "exsut$(node_index "$j")" \
        -m comment --comment "$TAG" -j ACCEPT
    done
  done

  # Images in the background while the swarm forms: it does not need them.
  load_images >"$DIR/load.log" 2>&1 &
  local loader=$!

  local a1
  a1=$(node_addr 1)
  log "swarm: manager $(node_name 1) on $a1:2377"
  dk 1 swarm init --advertise-addr "$a1" --listen-addr "$a1:2377" \
    --default-addr-pool "$POOL" --default-addr-pool-mask-length 24 >/dev/null
  local token
  token=$(dk 1 swarm join-token -q worker)
  for k in 2 3; do
    dk "$k" swarm join --token "$token" --advertise-addr "$(node_addr "$k")" \
      --listen-addr "$(node_addr "$k"):2377" "$a1:2377" >/dev/null
  done
  ready() { [ "$(dk 1 node ls --format '{{.Status}}' | grep -c '^Ready$')" = 3 ]; }
  wait_for ready || die "the swarm does not have 3 Ready nodes after ${TIMEOUT}s: $(dk 1 node ls 2>&1)"
  for k in 1 2 3; do
    dk "$k" info --format '{{.Swarm.NodeID}}' >"$DIR/n$k.id"
    local labels=(--label-add "exectl.node=n$k")
    [ "$k" = 1 ] || labels+=(--label-add exectl.role=app)
    dk 1 node update "${labels[@]}" "$(cat "$DIR/n$k.id")" >/dev/null
  done

  # One key for root on every node (each node's own stays valid) and one known_hosts for them all.
  ssh-keygen -q -t ed25519 -N '' -C "$TAG-client" -f "$DIR/client_key"
  : >"$DIR/known_hosts"
  for k in 1 2 3; do
    cat "$DIR/client_key.pub" >>"$DIR/$(node_name "$k")/authorized_keys"
    cat "$DIR/$(node_name "$k")/known_hosts" >>"$DIR/known_hosts"
  done

  if ! wait "$loader"; then
    cat "$DIR/load.log" >&2
    die "loading the images failed"
  fi
  cat "$DIR/load.log" >&2
  rm -f "$DIR/load.log"
  trap - EXIT
  summary >"$DIR/env"
  log "up in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
  cat "$DIR/env"
}

summary() {
  local k node
  cat <<EOF
NAME=$NAME
NODES=3
MANAGER_ADDR=$(node_addr 1)
MANAGER_SOCK=$(node_sock 1)
NODE_DOCKER_SOCKET=$NODE_DIR/docker.sock
EOF
  for k in 1 2 3; do
    node=$(node_name "$k")
    local role=worker labels="exectl.node=n$k,exectl.role=app"
    [ "$k" != 1 ] || { role=manager; labels="exectl.node=n$k"; }
    cat <<EOF
N${k}_ADDR=$(node_addr "$k")
N${k}_HOSTNAME=$node
N${k}_ROLE=$role
N${k}_NODE_ID=$(cat "$DIR/n$k.id")
N${k}_LABELS=$labels
N${k}_DOCKER_SOCK=$(node_sock "$k")
N${k}_DIR=$DIR/$node
EOF
  done
  # The ports are sut.sh's; its `up` output named them too (n1.up).
  sed -n 's/^\(SSH_PORT[A-Z_]*=\)/\1/p' "$DIR/n1.up"
  cat <<EOF
KEY=$DIR/client_key
WRONG_KEY=$DIR/$(node_name 1)/wrong_key
KNOWN_HOSTS=$DIR/known_hosts
POOL=$POOL
DIR=$DIR
EOF
}

cmd_env() {
  paths "$1"
  [ -f "$DIR/env" ] || die "no swarm named $NAME (rig.sh up $NAME)"
  local k
  for k in 1 2 3; do
    [ -e "/run/netns/$(node_ns "$k")" ] || die "swarm $NAME has lost node n$k (rig.sh up $NAME again)"
  done
  cat "$DIR/env"
}

case "${1:-}" in
  engine-stop | engine-start)
    [ $# -eq 3 ] && [[ $3 =~ ^[123]$ ]] || usage
    check_name "$2"
    paths "$2"
    sut "$1" "$(node_name "$3")"
    ;;
  up | down | env)
    [ $# -le 2 ] || usage
    name=${2:-swarm}
    check_name "$name"
    "cmd_$1" "$name"
    ;;
  *) usage ;;
esac
