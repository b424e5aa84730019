#!/usr/bin/env bash
# Check, apply or restore the host settings a C10k benchmark needs, from the files beside this script;
# readable and usable without exectl (see README.md).
#   tune.sh --role sut|client [--sysctl-file F] [--limits F] [--daemon-json F] [--root DIR] [--state DIR]
#           (--check | --apply)
#   tune.sh [--root DIR] [--state DIR] --restore
# --sysctl-file F  the kernel settings to check/set [default: sysctl/99-exectl-ROLE.conf]
# --limits F       also install F into ROOT/etc/security/limits.d/ (e.g. limits/99-exectl.conf)
# --daemon-json F  also install F as ROOT/etc/docker/daemon.json: the host's file merged with
#                  docker/daemon.json (exectl merges it; by hand see README.md). dockerd reads it on restart.
# --root DIR       prefix of every path read and written, sysctls included: KEY is the file
#                  DIR/proc/sys/KEY (a chroot with its /proc mounted, or a test's plain files), never the live
#                  kernel's /proc/sys unless it is mounted there. For tests and chroots.
# --state DIR      where the previous values are recorded [default: ROOT/var/lib/exectl/host]
#
# --check   one line per setting: `change KEY: CURRENT -> WANTED`, `keep KEY: VALUE` (or `keep KEY: CURRENT >=
#           WANTED`: capacity settings are minimums, a host above them is never lowered), or
#           `skip KEY: absent -> WANTED` (not on this kernel); then `nothing to change` when nothing differs
# --apply   records each setting's current value the first time it is changed (STATE/previous.conf for
#           sysctls, STATE/files/PATH for a file's previous content, STATE/files/PATH.absent when there was
#           none), then sets the wanted ones: `set KEY: CURRENT -> WANTED`. Running it again changes nothing.
# --restore puts back what was recorded (`restored KEY: CURRENT -> PREVIOUS`), removing the files that did
#           not exist, and forgets the records
# sysctls are set at runtime (written to /proc/sys, as sysctl -w does): a reboot also undoes them; copy the
# sysctl file to /etc/sysctl.d/ to keep them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
role="" file="" limits="" daemon="" root="" state="" action=""
while [ $# -gt 0 ]; do
  case "$1" in
    --role) role=$2; shift 2 ;;
    --sysctl-file) file=$2; shift 2 ;;
    --limits) limits=$2; shift 2 ;;
    --daemon-json) daemon=$2; shift 2 ;;
    --root) root=${2%/}; shift 2 ;;
    --state) state=$2; shift 2 ;;
    --check|--apply|--restore) action=${1#--}; shift ;;
    *) echo "tune.sh: unknown argument $1 (see the header of this script)" >&2; exit 2 ;;
  esac
done
[ -n "$action" ] || { echo "tune.sh: give --check, --apply or --restore" >&2; exit 2; }
[ -n "$state" ] || state="$root/var/lib/exectl/host"
if [ "$action" != restore ]; then
  if [ -z "$file" ]; then
    case "$role" in
      sut|client) file="$here/sysctl/99-exectl-$role.conf" ;;
      *) echo "tune.sh: --role must be sut or client (got '$role')" >&2; exit 2 ;;
    esac
  fi
  for f in "$file" "$limits" "$daemon"; do
    [ -z "$f" ] || [ -r "$f" ] || { echo "tune.sh: cannot read $f" >&2; exit 2; }
  done
fi

# KEY and VALUE of each setting line, whitespace in values normalised to one space.
settings() { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$file" | while IFS='=' read -r k v; do
  printf '%s=%s\n' "$(echo $k)" "$(echo $v)"; done; }
# Every sysctl is read and written through ROOT/proc/sys, so that --root never reaches the live kernel
# (sysctl(8) would: it always uses /proc/sys).
sysctl_path() { echo "$root/proc/sys/${1//.//}"; }
current() { local p; p=$(sysctl_path "$1"); [ -r "$p" ] && echo $(cat "$p") || echo "absent"; }
set_sysctl() { # KEY VALUE
  local p; p=$(sysctl_path "$1")
  { printf '%s\n' "$2" > "$p"; } 2>/dev/null || { echo "tune.sh: cannot set $1 to '$2' ($p)" >&2; exit 1; }
}
n=0 # settings that differ

# Capacity settings are minimums: a host already above them keeps its value (tuning never lowers them);
# an ephemeral port range already covering the wanted one is kept too. Anything else must be equal.
at_least=" net.core.somaxconn net.ipv4.tcp_max_syn_backlog net.core.netdev_max_backlog fs.file-max fs.nr_open
  net.netfilter.nf_conntrack_max "
enough() { # KEY HAVE WANT: does HAVE already satisfy WANT?
  local k=$1 have=$2 want=$3
  case "$at_least" in
    *[[:space:]]"$k"[[:space:]]*)
      [[ $have =~ ^[0-9]+$ && $want =~ ^[0-9]+$ ]] && [ "$have" -ge "$want" ]; return ;;
  esac
  if [ "$k" = net.ipv4.ip_local_port_range ]; then
    set -- $have $want # low high low high
    [ $# -eq 4 ] && [ "$1" -le "$3" ] && [ "$2" -ge "$4" ]; return
  fi
  return 1
}

# One sysctl: report it, and with --apply record its value (once) and set it.
sysctl_step() {
  local k=$1 want=$2 have
  have=$(current "$k")
  if [ "$have" = "absent" ]; then echo "skip $k: absent -> $want"; return; fi
  if [ "$have" = "$want" ]; then echo "keep $k: $have"; return; fi
  if enough "$k" "$have" "$want"; then echo "keep $k: $have >= $want"; return; fi
  n=$((n + 1))
  if [ "$action" = check ]; then echo "change $k: $have -> $want"; return; fi
  mkdir -p "$state"
  # Only the first change records: a second apply must not overwrite the original value with ours.
  awk -v k="$k" '$1 == k { found = 1 } END { exit !found }' "$state/previous.conf" 2>/dev/null ||
    echo "$k = $have" >> "$state/previous.conf"
  set_sysctl "$k" "$want"
  echo "set $k: $have -> $want"
}

# One whole file: SRC installed as DEST; the previous DEST (or its absence) recorded once.
file_step() {
  local src=$1 dest=$2 rec="$state/files$2" have="absent"
  if [ -f "$dest" ] && cmp -s "$src" "$dest"; then echo "keep $dest: exectl's copy"; return; fi
  [ -e "$dest" ] && have="other content"
  n=$((n + 1))
  if [ "$action" = check ]; then echo "change $dest: $have -> exectl's copy"; return; fi
  if [ ! -e "$rec" ] && [ ! -e "$rec.absent" ]; then
    mkdir -p "$(dirname "$rec")"
    if [ -e "$dest" ]; then cp -p "$dest" "$rec"; else : > "$rec.absent"; fi
  fi
  mkdir -p "$(dirname "$dest")"
  cp "$src" "$dest"   # over an existing file: its owner and mode stay
  echo "set $dest: $have -> exectl's copy"
}

restore() {
  local found=""
  if [ -f "$state/previous.conf" ]; then
    found=1
    while IFS='=' read -r k v; do
      k=$(echo $k); v=$(echo $v)
      [ "$v" = "absent" ] && continue
      have=$(current "$k")
      if [ "$have" = "$v" ]; then echo "keep $k: $v"; continue; fi
      if [ "$have" = absent ]; then echo "skip $k: absent -> $v"; continue; fi
      set_sysctl "$k" "$v"; echo "restored $k: $have -> $v"
    done < "$state/previous.conf"
    rm -f "$state/previous.conf"
  fi
  if [ -d "$state/files" ]; then
    found=1
    while read -r rec; do
      dest=${rec#"$state/files"}
      have="absent"; [ -e "${dest%.absent}" ] && have="present"
      case "$dest" in
        *.absent)
          dest=${dest%.absent}
          if [ "$have" = absent ]; then echo "keep $dest: absent"
          else rm -f "$dest"; echo "restored $dest: $have -> absent"; fi ;;
        *)
          if [ -f "$dest" ] && cmp -s "$rec" "$dest"; then echo "keep $dest: recorded content"
          else mkdir -p "$(dirname "$dest")"; cp -p "$rec" "$dest"; echo "restored $dest: $have -> recorded content"; fi ;;
      esac
    done < <(find "$state/files" -type f | sort)
    rm -rf "$state/files"
  fi
  [ -n "$found" ] || echo "nothing recorded in $state: nothing to restore"
}

case "$action" in
  check|apply)
    while IFS='=' read -r k want; do sysctl_step "$k" "$want"; done < <(settings)
    [ -z "$limits" ] || file_step "$limits" "$root/etc/security/limits.d/$(basename "$limits")"
    [ -z "$daemon" ] || file_step "$daemon" "$root/etc/docker/daemon.json"
    [ "$n" -gt 0 ] || echo "nothing to change"
    ;;
  restore) restore ;;
esac
