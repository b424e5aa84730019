#!/bin/bash
# Subset of the official mariadb image's healthcheck.sh: each --test must pass, e.g.
#   healthcheck.sh --connect --innodb_initialized
# Credentials come from /var/lib/mysql/.my-healthcheck.cnf (written at first boot), over TCP, so the check
# fails while the entrypoint's temporary server (no networking) is initialising.
set -eo pipefail

defaults=/var/lib/mysql/.my-healthcheck.cnf
tests=()
for a in "$@"; do
  case "$a" in
    --defaults-file=*|--defaults-extra-file=*) defaults=${a#*=} ;;
    --su=*|--su-mysql|--no-defaults|--datadir=*|--replication*|--galera*|--mariadbupgrade) ;;  # not needed
    --*) tests+=("${a#--}") ;;
  esac
done
[ ${#tests[@]} -gt 0 ] || { echo "healthcheck.sh: no tests given (e.g. --connect --innodb_initialized)" >&2; exit 1; }
[ -r "$defaults" ] || { echo "healthcheck.sh: $defaults missing (database not initialised yet)" >&2; exit 1; }

q() { mariadb --defaults-extra-file="$defaults" --skip-column-names --batch -e "$1"; }

for t in "${tests[@]}"; do
  case "$t" in
    connect)
      q 'SELECT 1' >/dev/null ;;
    innodb_initialized)
      [ "$(q "SELECT 1 FROM information_schema.ENGINES WHERE engine='innodb' AND support IN ('YES','DEFAULT','ENABLED')")" = 1 ] ;;
    innodb_buffer_pool_loaded)
      q "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='Innodb_buffer_pool_load_status'" | grep -q 'completed' ;;
    *) echo "healthcheck.sh: unsupported test --$t" >&2; exit 1 ;;
  esac || { echo "healthcheck.sh: $t failed" >&2; exit 1; }
done
