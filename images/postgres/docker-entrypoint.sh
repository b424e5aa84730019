#!/bin/bash
# Entry point honouring the official postgres image's contract: on first boot (no $PGDATA/PG_VERSION) run
# initdb with POSTGRES_USER/POSTGRES_PASSWORD, allow password logins from any host, create POSTGRES_DB,
# run /docker-entrypoint-initdb.d/*, then exec the server as user postgres.
set -euo pipefail

log() { echo "$(date -u +'%F %T') [entrypoint] $*"; }
die() { echo "$(date -u +'%F %T') [entrypoint] ERROR: $*" >&2; exit 1; }

file_env() { # VAR [DEFAULT]: $VAR, else the content of $VAR_FILE, else DEFAULT
  local var=$1 def=${2:-} f="${1}_FILE"
  if [ -n "${!var:-}" ]; then return; fi
  if [ -n "${!f:-}" ]; then printf -v "$var" '%s' "$(<"${!f}")"; else printf -v "$var" '%s' "$def"; fi
  export "$var"
}

if [ "${1:0:1}" = '-' ]; then set -- postgres "$@"; fi

# Root: fix ownership, then re-run this script as postgres (setpriv is in util-linux, always present).
if [ "$1" = postgres ] && [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown -R postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ "$1" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  file_env POSTGRES_PASSWORD
  file_env POSTGRES_USER postgres
  file_env POSTGRES_DB "$POSTGRES_USER"
  file_env POSTGRES_INITDB_ARGS
  POSTGRES_HOST_AUTH_METHOD=${POSTGRES_HOST_AUTH_METHOD:-}
  if [ -z "$POSTGRES_PASSWORD" ] && [ "$POSTGRES_HOST_AUTH_METHOD" != trust ]; then
    die "Database is uninitialized and superuser password is not specified.
       You must specify POSTGRES_PASSWORD to a non-empty value for the superuser
       (or POSTGRES_HOST_AUTH_METHOD=trust to allow all connections without a password)."
  fi
  auth=${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}

  log "initdb in $PGDATA"
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  # shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a list of options, as in the official image
  initdb --username="$POSTGRES_USER" --pwfile="$pwfile" --encoding=UTF8 --locale=C.UTF-8 \
    $POSTGRES_INITDB_ARGS >/dev/null
  rm -f "$pwfile"
  printf '\nhost all all all %s\n' "$auth" >>"$PGDATA/pg_hba.conf"

  # Temporary server without TCP and on a private socket directory: a healthcheck's `pg_isready` (default
  # socket or TCP) stays red until the real server is up, so depends_on: service_healthy cannot start an
  # app against a server that is about to restart.
  export PGHOST; PGHOST=$(mktemp -d /tmp/pg-init.XXXXXX)
  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -p 5432 -c unix_socket_directories=$PGHOST" -w start >/dev/null
  psql_=(psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --no-password --no-psqlrc --dbname postgres)
  if [ "$POSTGRES_DB" != postgres ]; then
    exists=$("${psql_[@]}" -tA -v db="$POSTGRES_DB" <<<"SELECT 1 FROM pg_database WHERE datname = :'db';")
    [ -n "$exists" ] || "${psql_[@]}" -q -v db="$POSTGRES_DB" <<<'CREATE DATABASE :"db";'
  fi
  for f in /docker-entrypoint-initdb.d/*; do
    [ -e "$f" ] || continue
    case "$f" in
      *.sh)     log "running $f"; . "$f" ;;
      *.sql)    log "running $f"; "${psql_[@]}" --dbname "$POSTGRES_DB" -f "$f" ;;
      *.sql.gz) log "running $f"; gzip -dc "$f" | "${psql_[@]}" --dbname "$POSTGRES_DB" ;;
      *)        log "ignoring $f" ;;
    esac
  done
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  rm -rf "$PGHOST"; unset PGHOST
  log "PostgreSQL init process complete; ready for start up."
fi

exec "$@"
