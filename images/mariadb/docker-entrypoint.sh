#!/bin/bash
# Entry point honouring the official mariadb image's contract: on first boot (empty /var/lib/mysql)
# create the system tables, the root password, MARIADB_DATABASE and MARIADB_USER (grants from any host),
# run /docker-entrypoint-initdb.d/*, then exec the server as user mysql.
set -euo pipefail

log() { echo "$(date -u +'%F %T') 0 [Note] [Entrypoint]: $*"; }
die() { echo "$(date -u +'%F %T') 0 [ERROR] [Entrypoint]: $*" >&2; exit 1; }

# file_env VAR: MARIADB_VAR, else MYSQL_VAR, else the content of MARIADB_VAR_FILE / MYSQL_VAR_FILE.
file_env() {
  local var=$1 def=${2:-} v=""
  for n in "MARIADB_$var" "MYSQL_$var"; do
    if [ -n "${!n:-}" ]; then v=${!n}; break; fi
    local f="${n}_FILE"
    if [ -n "${!f:-}" ]; then v=$(<"${!f}"); break; fi
  done
  printf -v "$var" '%s' "${v:-$def}"
}

# First argument an option: run it as the server's options.
if [ "${1:0:1}" = '-' ]; then set -- mariadbd "$@"; fi

if [ "$1" != mariadbd ] && [ "$1" != mysqld ]; then
  exec "$@"
fi

DATADIR=/var/lib/mysql
SOCKET=/run/mysqld/mysqld.sock
mkdir -p /run/mysqld
if [ "$(id -u)" = 0 ]; then
  chown mysql:mysql /run/mysqld
  chown -R mysql:mysql "$DATADIR"
  set -- "$@" --user=mysql
fi

sql_escape() { local s=${1//\\/\\\\}; printf '%s' "${s//\'/\\\'}"; }

if [ ! -d "$DATADIR/mysql" ]; then
  file_env ROOT_PASSWORD
  file_env ALLOW_EMPTY_ROOT_PASSWORD
  file_env RANDOM_ROOT_PASSWORD
  file_env DATABASE
  file_env USER
  file_env PASSWORD
  file_env ROOT_HOST %
  if [ -z "$ROOT_PASSWORD" ] && [ -z "$ALLOW_EMPTY_ROOT_PASSWORD" ] && [ -z "$RANDOM_ROOT_PASSWORD" ]; then
    die "Database is uninitialized and password option is not specified
	You need to specify one of MARIADB_ROOT_PASSWORD, MARIADB_ALLOW_EMPTY_ROOT_PASSWORD and MARIADB_RANDOM_ROOT_PASSWORD"
  fi
  if [ -n "$RANDOM_ROOT_PASSWORD" ] && [ -z "$ROOT_PASSWORD" ]; then
    ROOT_PASSWORD=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
    log "GENERATED ROOT PASSWORD: $ROOT_PASSWORD"
  fi
  [ "$USER" != root ] || die "MARIADB_USER=root is not allowed: use MARIADB_ROOT_PASSWORD"

  log "Initializing database files"
  mariadb-install-db --user=mysql --datadir="$DATADIR" --skip-test-db \
    --auth-root-authentication-method=normal --default-time-zone=SYSTEM --skip-name-resolve >/dev/null
  log "Starting temporary server"
  # No networking while initialising: the healthcheck (TCP) stays red until the real server is up.
  mariadbd --user=mysql --datadir="$DATADIR" --skip-networking --socket="$SOCKET" --skip-log-bin &
  tmp_pid=$!
  for i in $(seq 1 60); do
    mariadb-admin --socket="$SOCKET" -uroot ping >/dev/null 2>&1 && break
    kill -0 "$tmp_pid" 2>/dev/null || die "temporary server failed to start"
    sleep 0.5
  done
  client=(mariadb --protocol=socket --socket="$SOCKET" -uroot --binary-mode)

  hc_pw=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
  root_pw=$(sql_escape "$ROOT_PASSWORD")
  {
    echo "SET @@SESSION.SQL_LOG_BIN=0;"
    # The install's anonymous users would shadow MARIADB_USER's %-grants for local connections.
    echo "DELETE FROM mysql.global_priv WHERE User='';"
    echo "ALTER USER 'root'@'localhost' IDENTIFIED BY '$root_pw';"
    if [ -n "$ROOT_HOST" ] && [ "$ROOT_HOST" != localhost ]; then
      echo "CREATE USER 'root'@'$ROOT_HOST' IDENTIFIED BY '$root_pw';"
      echo "GRANT ALL ON *.* TO 'root'@'$ROOT_HOST' WITH GRANT OPTION;"
      echo "GRANT PROXY ON ''@'%' TO 'root'@'$ROOT_HOST' WITH GRANT OPTION;"
    fi
    # healthcheck.sh's user, as in the official image (credentials in $DATADIR/.my-healthcheck.cnf).
    for h in 127.0.0.1 ::1 localhost; do
      echo "CREATE USER 'healthcheck'@'$h' IDENTIFIED BY '$hc_pw';"
    done
    if [ -n "$DATABASE" ]; then
      echo "CREATE DATABASE IF NOT EXISTS \`${DATABASE//\`/\`\`}\`;"
    fi
    if [ -n "$USER" ] && [ -n "$PASSWORD" ]; then
      echo "CREATE USER '$(sql_escape "$USER")'@'%' IDENTIFIED BY '$(sql_escape "$PASSWORD")';"
      if [ -n "$DATABASE" ]; then
        echo "GRANT ALL ON \`${DATABASE//\`/\`\`}\`.* TO '$(sql_escape "$USER")'@'%';"
      fi
    fi
    echo "FLUSH PRIVILEGES;"
  } | "${client[@]}"
  cat >"$DATADIR/.my-healthcheck.cnf" <<CNF
[mariadb-client]
port=3306
socket=$SOCKET
user=healthcheck
password=$hc_pw
protocol=tcp
CNF
  chown mysql:mysql "$DATADIR/.my-healthcheck.cnf"; chmod 600 "$DATADIR/.my-healthcheck.cnf"

  db_args=(); [ -n "$DATABASE" ] && db_args=("$DATABASE")
  for f in /docker-entrypoint-initdb.d/*; do
    [ -e "$f" ] || continue
    case "$f" in
      *.sh)     log "running $f"; . "$f" ;;
      *.sql)    log "running $f"; "${client[@]}" -p"$ROOT_PASSWORD" "${db_args[@]}" <"$f" ;;
      *.sql.gz) log "running $f"; gzip -dc "$f" | "${client[@]}" -p"$ROOT_PASSWORD" "${db_args[@]}" ;;
      *)        log "ignoring $f" ;;
    esac
  done

  mariadb-admin --socket="$SOCKET" -uroot -p"$ROOT_PASSWORD" shutdown
  wait "$tmp_pid" || true
  log "MariaDB init process done. Ready for start up."
fi

exec "$@"
