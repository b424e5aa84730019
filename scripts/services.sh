#!/usr/bin/env bash
# Idempotent: start the database servers the stand-in's tests need on loopback (MariaDB :3306, PostgreSQL
# :5432, Redis :6379) when they are not already answering, and create the test role `exelearning` (password
# `exelearning`) on both SQL servers, allowed to create and drop databases (each test uses a fresh one).
# There is no systemd on these machines, so the daemons are started directly. Run as root.
set -euo pipefail

wait_for() { # name, attempts, command...
  local name=$1 n=$2; shift 2
  for _ in $(seq "$n"); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  echo "services: $name did not come up" >&2
  return 1
}

# --- MariaDB ---------------------------------------------------------------------------------------
if ! mariadb-admin --protocol=tcp -h127.0.0.1 -P3306 -uexelearning -pexelearning ping >/dev/null 2>&1 &&
   ! mariadb-admin ping >/dev/null 2>&1; then
  install -d -o mysql -g mysql /run/mysqld
  if [ ! -d /var/lib/mysql/mysql ]; then
    mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
  fi
  echo "services: starting MariaDB"
  # setsid + nohup: the daemon must outlive this script and its session.
  setsid nohup mysqld_safe --user=mysql --bind-address=127.0.0.1 --port=3306 \
    --max-connections=1000 >/var/log/exectl-mariadb.log 2>&1 < /dev/null &
fi
wait_for MariaDB 120 mariadb-admin ping
mariadb <<'SQL'
CREATE USER IF NOT EXISTS 'exelearning'@'localhost' IDENTIFIED BY 'exelearning';
CREATE USER IF NOT EXISTS 'exelearning'@'127.0.0.1' IDENTIFIED BY 'exelearning';
CREATE USER IF NOT EXISTS 'exelearning'@'%' IDENTIFIED BY 'exelearning';
CREATE DATABASE IF NOT EXISTS exelearning CHARACTER SET utf8mb4;
GRANT ALL PRIVILEGES ON *.* TO 'exelearning'@'localhost';
GRANT ALL PRIVILEGES ON *.* TO 'exelearning'@'127.0.0.1';
GRANT ALL PRIVILEGES ON *.* TO 'exelearning'@'%';
FLUSH PRIVILEGES;
SQL
wait_for "MariaDB (tcp)" 20 mariadb-admin --protocol=tcp -h127.0.0.1 -P3306 -uexelearning -pexelearning ping
echo "services: MariaDB ready on 127.0.0.1:3306"

# --- PostgreSQL -----------------------------------------------------------------------------------
pg_ver=$(ls /usr/lib/postgresql | sort -V | tail -1)
if ! pg_isready -h 127.0.0.1 -p 5432 >/dev/null 2>&1; then
  if ! pg_lsclusters -h | awk '{print $1" "$2}' | grep -qx "$pg_ver main"; then
    pg_createcluster "$pg_ver" main --port=5432 >/dev/null
  fi
  echo "services: starting PostgreSQL $pg_ver"
  pg_ctlcluster "$pg_ver" main start || true
fi
wait_for PostgreSQL 120 pg_isready -h 127.0.0.1 -p 5432
su postgres -c "psql -q -v ON_ERROR_STOP=1" <<'SQL'
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'exelearning') THEN
    CREATE ROLE exelearning LOGIN PASSWORD 'exelearning' CREATEDB;
  ELSE
    ALTER ROLE exelearning LOGIN PASSWORD 'exelearning' CREATEDB;
  END IF;
END $$;
SQL
if ! su postgres -c "psql -tAc \"SELECT 1 FROM pg_database WHERE datname='exelearning'\"" | grep -q 1; then
  su postgres -c "createdb -O exelearning exelearning"
fi
echo "services: PostgreSQL ready on 127.0.0.1:5432"

# --- Redis -----------------------------------------------------------------------------------------
if ! redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; then
  echo "services: starting Redis"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save '' --appendonly no \
    --logfile /var/log/exectl-redis.log
fi
wait_for Redis 60 sh -c 'redis-cli -h 127.0.0.1 -p 6379 ping | grep -q PONG'
echo "services: Redis ready on 127.0.0.1:6379"
