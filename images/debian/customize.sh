#!/usr/bin/env bash
# Tweaks applied to the debootstrap'd root file system before it is imported as exectl-fixture/debian.
# Usage: customize.sh ROOTFS. Editing this file changes the base's hash, hence rebuilds every derived image.
set -euo pipefail
R=$1
# No init system in a container: forbid maintainer scripts from trying to start services during builds.
printf '#!/bin/sh\nexit 101\n' >"$R/usr/sbin/policy-rc.d"
chmod 755 "$R/usr/sbin/policy-rc.d"
# Smaller, faster installs in derived images: no recommends, no docs/man pages.
cat >"$R/etc/apt/apt.conf.d/90exectl-fixture" <<'CONF'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Languages "none";
CONF
cat >"$R/etc/dpkg/dpkg.cfg.d/90exectl-fixture" <<'CONF'
path-exclude /usr/share/doc/*
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
CONF
# Docker supplies these at run time; do not bake in the build host's.
rm -f "$R/etc/resolv.conf" "$R/etc/hostname"
# Package caches are dead weight in the image (derived images run apt-get update themselves).
rm -rf "$R"/var/cache/apt/archives/*.deb "$R"/var/lib/apt/lists/* "$R"/var/log/*.log
# Like the official Debian images: apt's caches (.deb, pkgcache.bin) never end up in a layer.
cat >"$R/etc/apt/apt.conf.d/91exectl-clean" <<'CONF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
CONF
