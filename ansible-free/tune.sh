#!/usr/bin/env bash
# Check, apply or restore the kernel settings a C10k benchmark needs, from the sysctl.d files beside this
# script; readable and usable without exectl.
#   tune.sh --role sut|client [--sysctl-file F] [--state DIR] (--check | --apply | --restore)
# --check   prints one `change KEY: CURRENT -> WANTED` line per setting that differs, or `nothing to change`
# --apply   records the current values once (STATE/previous.conf), then sets the wanted ones (sysctl -w);
#           running it again changes nothing
# --restore sets the recorded values back and forgets them
# Persistence across reboots (copying the file to /etc/sysctl.d, limits.d, daemon.json) is a separate,
# explicit step: see README.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
role="" file="" state="/var/lib/exectl/host" action=""
while [ $# -gt 0 ]; do
  case "$1" in
    --role) role=$2; shift 2 ;;
    --sysctl-file) file=$2; shift 2 ;;
    --state) state=$2; shift 2 ;;
    --check|--apply|--restore) action=${1#--}; shift ;;
    *) echo "tune.sh: unknown argument $1 (see the header of this script)" >&2; exit 2 ;;
  esac
done
[ -n "$action" ] || { echo "tune.sh: give --check, --apply or --restore" >&2; exit 2; }
if [ -z "$file" ]; then
  case "$role" in
    sut|client) file="$here/sysctl/99-exectl-$role.conf" ;;
    *) echo "tune.sh: --role must be sut or client (got '$role')" >&2; exit 2 ;;
  esac
fi
[ -r "$file" ] || { echo "tune.sh: cannot read $file" >&2; exit 2; }

# KEY and VALUE of each setting line, whitespace in values normalised to one space.
settings() { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$file" | while IFS='=' read -r k v; do
  printf '%s=%s\n' "$(echo $k)" "$(echo $v)"; done; }
current() { local p="/proc/sys/${1//.//}"; [ -r "$p" ] && echo $(cat "$p") || echo "absent"; }

case "$action" in
  check)
    n=0
    while IFS='=' read -r k want; do
      have=$(current "$k")
      if [ "$have" != "$want" ]; then echo "change $k: $have -> $want"; n=$((n + 1)); fi
    done < <(settings)
    [ "$n" -gt 0 ] || echo "nothing to change"
    ;;
  apply)
    mkdir -p "$state"
    # Only the first apply records: a second one must not overwrite the original values with ours.
    if [ ! -f "$state/previous.conf" ]; then
      while IFS='=' read -r k _; do echo "$k = $(current "$k")"; done < <(settings) > "$state/previous.conf"
    fi
    while IFS='=' read -r k want; do
      if [ "$(current "$k")" = "absent" ]; then echo "skip $k: not available on this kernel"; continue; fi
      if [ "$(current "$k")" != "$want" ]; then
        sysctl -q -w "$k=$want"; echo "set $k = $want"
      fi
    done < <(settings)
    ;;
  restore)
    [ -f "$state/previous.conf" ] || { echo "nothing recorded in $state: nothing to restore"; exit 0; }
    while IFS='=' read -r k v; do
      k=$(echo $k); v=$(echo $v)
      [ "$v" = "absent" ] && continue
      if [ "$(current "$k")" != "$v" ]; then sysctl -q -w "$k=$v"; echo "restored $k = $v"; fi
    done < "$state/previous.conf"
    rm -f "$state/previous.conf"
    ;;
esac
