#!/usr/bin/env bash
# Check that the fixture images (images/build.sh) honour their contracts, on the real engine:
#   bash images/selftest.sh [IMAGE...]     IMAGE: mariadb postgres redis nginx traefik standin sqlite stacks
# (stacks: the stand-in on MariaDB and on PostgreSQL + Redis, reached by service name like compose does).
# Every container and network it makes is named exectl-selftest-*, and removed at exit. Exits non-zero
# on the first failure, printing the container's log. Loopback/Docker networks only.
set -euo pipefail

P=exectl-selftest-$$
NET=$P-net
ALL=(mariadb postgres redis nginx traefik standin sqlite stacks)
[ $# -gt 0 ] || set -- "${ALL[@]}"

made=()
cleanup() {
  local c
  for c in "${made[@]}"; do docker rm -f -v "$c" >/dev/null 2>&1 || true; done
  docker network rm "$NET" >/dev/null 2>&1 || true
  docker volume rm "$P-data" >/dev/null 2>&1 || true
}
trap cleanup EXIT

fail() { echo "selftest: FAIL: $*" >&2; exit 1; }
ok() { echo "selftest: ok: $*"; }
run() { # NAME docker-run-args...: detached container on the test network, removed at exit
  local n=$1; shift
  made+=("$n")
  docker run -d --pull never --name "$n" --network "$NET" "$@" >/dev/null
}
# wait_for SECONDS DESCRIPTION CONTAINER CMD...: retry CMD until it succeeds.
wait_for() {
  local t=$1 what=$2 c=$3; shift 3
  local end=$((SECONDS + t))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $end ]; then
      echo "--- docker logs $c" >&2; docker logs --tail 40 "$c" >&2 || true
      fail "$what (after ${t}s)"
    fi
    sleep 0.5
  done
}
health() { [ "$(docker inspect -f '{{.State.Health.Status}}' "$1")" = healthy ]; }

docker network create "$NET" >/dev/null

for img in "$@"; do
  case $img in
  mariadb)
    run $P-mariadb -e MARIADB_ROOT_PASSWORD=rootpw -e MARIADB_DATABASE=exelearning \
      -e MARIADB_USER=exelearning -e "MARIADB_PASSWORD=s3cr'et" \
      --health-cmd 'healthcheck.sh --connect --innodb_initialized' --health-interval 1s \
      exectl-fixture/mariadb:11
    wait_for 90 "mariadb healthy" $P-mariadb health $P-mariadb
    # The app's view: the env user, over the network, from another container.
    out=$(docker run --rm --pull never --network "$NET" --entrypoint mariadb exectl-fixture/mariadb:11 \
      -h $P-mariadb -uexelearning "-ps3cr'et" exelearning -N -e 'CREATE TABLE t (i INT); INSERT INTO t VALUES (42); SELECT i FROM t')
    [ "$out" = 42 ] || fail "mariadb: user query over the network gave '$out'"
    # exectl streams SQL into the client through docker exec.
    out=$(echo 'SELECT COUNT(*) FROM exelearning.t;' | docker exec -i $P-mariadb mariadb -uroot -prootpw -N)
    [ "$out" = 1 ] || fail "mariadb: root SQL on stdin via docker exec gave '$out'"
    docker run --rm --pull never --network "$NET" --entrypoint mariadb exectl-fixture/mariadb:11 \
      -h $P-mariadb -uroot -prootpw -e 'SELECT 1' >/dev/null || fail "mariadb: remote root login"
    # A second boot on the same data must not re-initialise.
    docker restart $P-mariadb >/dev/null
    wait_for 60 "mariadb healthy after restart" $P-mariadb health $P-mariadb
    ok "mariadb: env init, healthcheck.sh, remote user+root logins, SQL via docker exec, restart"
    ;;
  postgres)
    run $P-postgres -e POSTGRES_PASSWORD=pgpw -e POSTGRES_USER=exelearning -e POSTGRES_DB=exelearning \
      --health-cmd 'pg_isready -U exelearning -d exelearning' --health-interval 1s \
      exectl-fixture/postgres:15
    wait_for 90 "postgres healthy" $P-postgres health $P-postgres
    out=$(docker run --rm --pull never --network "$NET" -e PGPASSWORD=pgpw --entrypoint psql exectl-fixture/postgres:15 \
      -h $P-postgres -U exelearning -d exelearning -tAc 'CREATE TABLE t (i int); INSERT INTO t VALUES (42); SELECT i FROM t')
    [ "$(echo "$out" | tail -n1)" = 42 ] || fail "postgres: user query over the network gave '$out'"
    # Remote logins need the password (scram), not trust.
    if docker run --rm --pull never --network "$NET" -e PGPASSWORD=wrong --entrypoint psql exectl-fixture/postgres:15 \
         -h $P-postgres -U exelearning -d exelearning -c 'SELECT 1' >/dev/null 2>&1; then
      fail "postgres: wrong password accepted"
    fi
    enc=$(docker exec $P-postgres psql -U exelearning -d exelearning -tAc 'SHOW server_encoding')
    [ "$enc" = UTF8 ] || fail "postgres: server_encoding $enc"
    docker restart $P-postgres >/dev/null
    wait_for 60 "postgres healthy after restart" $P-postgres health $P-postgres
    ok "postgres: env init, pg_isready, remote psql with password (wrong one refused), UTF8, restart"
    ;;
  redis)
    # Compose's command line, as in docker-compose.redis.yml.
    run $P-redis --health-cmd 'redis-cli ping' --health-interval 1s exectl-fixture/redis:7 \
      redis-server --appendonly yes --maxmemory 256mb --maxmemory-policy allkeys-lru
    wait_for 30 "redis healthy" $P-redis health $P-redis
    out=$(docker run --rm --pull never --network "$NET" --entrypoint redis-cli exectl-fixture/redis:7 -h $P-redis ping)
    [ "$out" = PONG ] || fail "redis: remote ping gave '$out'"
    [ "$(docker exec $P-redis redis-cli config get appendonly | tail -n1)" = yes ] || fail "redis: command ignored"
    run $P-redis2 exectl-fixture/redis:7   # default CMD
    wait_for 30 "redis (default command) answers" $P-redis2 docker exec $P-redis2 redis-cli ping
    ok "redis: compose command line, redis-cli ping remote and local, default command"
    ;;
  nginx)
    conf=$(mktemp); chmod 644 "$conf"
    cat >"$conf" <<'EOF'
events { worker_connections 1024; }
http { server { listen 80; location /health { access_log off; return 200 "healthy\n"; }
                location / { return 200 "selftest\n"; } } }
EOF
    run $P-nginx -v "$conf:/etc/nginx/nginx.conf:ro" exectl-fixture/nginx:1
    wait_for 20 "nginx answers from another container" $P-nginx \
      docker run --rm --pull never --network "$NET" --entrypoint bash exectl-fixture/nginx:1 -c \
      "exec 3<>/dev/tcp/$P-nginx/80 && printf 'GET /health HTTP/1.0\\r\\n\\r\\n' >&3 && grep -q healthy <&3"
    docker exec $P-nginx nginx -t >/dev/null 2>&1 || fail "nginx -t on the mounted config"
    docker run --rm --pull never --network "$NET" --entrypoint bash exectl-fixture/nginx:1 -c \
      "exec 3<>/dev/tcp/$P-nginx/80 && printf 'GET /logged HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3" >/dev/null
    sleep 0.5
    docker logs $P-nginx 2>&1 | grep -q 'GET /logged' || fail "nginx: access log not on stdout"
    rm -f "$conf"
    ok "nginx: mounted /etc/nginx/nginx.conf, serving, nginx -t, access log on stdout"
    ;;
  traefik)
    out=$(docker run --rm --pull never exectl-fixture/traefik:3 version)
    echo "$out" | grep -q '^Version: *3\.' || fail "traefik version: $out"
    # Routing by Docker labels against this engine, as exectl's Traefik stacks do.
    run $P-traefik -v /var/run/docker.sock:/var/run/docker.sock:ro exectl-fixture/traefik:3 \
      --providers.docker=true --providers.docker.exposedbydefault=false \
      "--providers.docker.network=$NET" --entrypoints.web.address=:80
    conf=$(mktemp); chmod 644 "$conf"
    echo 'events {} http { server { listen 8080; location / { return 200 "routed\n"; } } }' >"$conf"
    run $P-backend -v "$conf:/etc/nginx/nginx.conf:ro" \
      -l traefik.enable=true -l "traefik.http.routers.$P.rule=Host(\`selftest.local\`)" \
      -l "traefik.http.services.$P.loadbalancer.server.port=8080" exectl-fixture/nginx:1
    wait_for 30 "traefik routes to a labelled container" $P-traefik \
      docker run --rm --pull never --network "$NET" --entrypoint bash exectl-fixture/nginx:1 -c \
      "exec 3<>/dev/tcp/$P-traefik/80 && printf 'GET / HTTP/1.0\\r\\nHost: selftest.local\\r\\n\\r\\n' >&3 && grep -q routed <&3"
    rm -f "$conf"
    ok "traefik: $(echo "$out" | sed -n 's/^Version: *//p'), routes by Docker labels"
    ;;
  standin)
    # A named volume on /mnt/data, as in compose: it takes the image's ownership (uid 1000, user bun).
    run $P-standin -v "$P-data:/mnt/data" -e DB_DRIVER=sqlite -e DB_PATH=/mnt/data/exelearning.db \
      -e API_JWT_SECRET="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')" \
      -e APP_SECRET="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')" \
      --health-interval 2s --health-start-period 1s exectl-fixture/standin:latest
    wait_for 90 "standin healthy (image HEALTHCHECK)" $P-standin health $P-standin
    docker exec $P-standin test -f /mnt/data/exelearning.db || fail "standin: no SQLite file at DB_PATH"
    ok "standin: SQLite boot on a named volume, HEALTHCHECK healthy, DB at /mnt/data"
    ;;
  sqlite)
    # exectl prepare's one-shot: sqlite3 on a data volume (the stand-in's, when that test ran first).
    out=$(docker run --rm --pull never -v "$P-data:/mnt/data" exectl-fixture/sqlite:3 \
      sqlite3 /mnt/data/selftest.db 'CREATE TABLE t (i); INSERT INTO t VALUES (42); SELECT i FROM t;')
    [ "$out" = 42 ] || fail "sqlite: sqlite3 on a volume gave '$out'"
    tables=$(docker run --rm --pull never -v "$P-data:/mnt/data" exectl-fixture/sqlite:3 sh -c \
      'rm -f /mnt/data/selftest.db; if [ -f /mnt/data/exelearning.db ]; then sqlite3 /mnt/data/exelearning.db .tables; else echo none; fi')
    [ -n "$tables" ] || fail "sqlite: the stand-in's database has no tables"
    ok "sqlite: sqlite3 one-shot on a data volume"
    ;;
  stacks)
    secret() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
    run $P-s-mariadb --network-alias mariadb -e MARIADB_ROOT_PASSWORD=root -e MARIADB_DATABASE=exelearning \
      -e MARIADB_USER=exelearning -e MARIADB_PASSWORD=pw exectl-fixture/mariadb:11
    run $P-s-postgres --network-alias postgres -e POSTGRES_PASSWORD=pw -e POSTGRES_USER=exelearning \
      -e POSTGRES_DB=exelearning exectl-fixture/postgres:15
    run $P-s-redis --network-alias redis exectl-fixture/redis:7 redis-server --appendonly yes
    # The stand-in waits for its database itself (like the real entrypoint); no ordering needed here.
    run $P-s-app1 -e DB_DRIVER=pdo_mysql -e DB_HOST=mariadb -e DB_PASSWORD=pw \
      -e API_JWT_SECRET="$(secret)" -e APP_SECRET="$(secret)" \
      --health-interval 2s --health-start-period 1s exectl-fixture/standin:latest
    run $P-s-app2 -e DB_DRIVER=pdo_pgsql -e DB_HOST=postgres -e DB_PASSWORD=pw -e REDIS_HOST=redis \
      -e API_JWT_SECRET="$(secret)" -e APP_SECRET="$(secret)" \
      --health-interval 2s --health-start-period 1s exectl-fixture/standin:latest
    wait_for 120 "standin on MariaDB healthy" $P-s-app1 health $P-s-app1
    wait_for 120 "standin on PostgreSQL + Redis healthy" $P-s-app2 health $P-s-app2
    ok "stacks: standin on MariaDB, standin on PostgreSQL + Redis (names resolved by the static binary)"
    ;;
  *) fail "unknown image $img" ;;
  esac
done
echo "selftest: all passed ($*)"
