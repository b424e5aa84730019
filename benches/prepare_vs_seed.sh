#!/usr/bin/env bash
# Benchmark: `exectl prepare --accounts 10000 --projects 10000` on the ha stack (bcrypt cost 10, the app's;
# verification through the LB included), next to the seed's way of making accounts — one `docker exec`
# per account running a client INSERT — timed on 100 accounts and extrapolated to 10,000, as a ratio.
# The seed's way is timed with the hash already computed and without its project HTTP calls, so the
# baseline is a lower bound (the app CLI also starts Bun and hashes at cost 10 for every account).
# Then the large run: `--accounts 100000 --projects 100000` (each project with its Yjs document), once per
# round, from none of its rows on a settled database (VACUUM ANALYZE before each round, untimed), verified,
# with its phases.
# Usage: bash benches/prepare_vs_seed.sh [ROUNDS] [LARGE]   (LARGE: the large run's N, default 100000, 0 = skip)
# EXECTL_BENCH_STACK / EXECTL_BENCH_LB_PORT: another stack name / LB port (engineers sharing one engine).
# (needs the engine and fixture images: scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
large=${2:-100000}
cargo build --release -q -p exectl
exectl=$PWD/target/release/exectl
state=$(mktemp -d); export EXECTL_STATE_DIR=$state
stack=${EXECTL_BENCH_STACK:-bench-prep}
trap '"$exectl" teardown --stack $stack --purge >/dev/null 2>&1 || true; rm -rf "$state"' EXIT
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc -l; }

"$exectl" deploy ha --stack $stack --lb-port "${EXECTL_BENCH_LB_PORT:-18395}" --nofile 20000 --worker-rlimit-nofile 20000 \
  --worker-connections 10000 --cpus 1 --memory 512m --health-interval 1s \
  --images images/fixtures.yaml --json >/dev/null || true   # a limits note must not stop the bench

first=0; rerun=0
for r in $(seq "$rounds"); do
  "$exectl" prepare --stack $stack --reset >/dev/null
  t=$(now); "$exectl" prepare --stack $stack --accounts 10000 --projects 10000 --json >"$state/first.json"
  first=$(echo "$first + $(since "$t")" | bc -l)
  t=$(now); "$exectl" prepare --stack $stack --accounts 10000 --projects 10000 --json >"$state/rerun.json"
  rerun=$(echo "$rerun + $(since "$t")" | bc -l)
done
added=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["added"]["accounts"], d["added"]["projects"], d["added"].get("documents"))' "$state/first.json")
phases=$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))["ms"]; print(" ".join(f"{k} {v} ms," for k,v in m.items()))' "$state/first.json")

# The seed's way: one exec per account (hash precomputed once, cost 10).
hash=$(docker exec exectl-$stack-postgres psql -qAt -U exelearning exelearning \
  -c "SELECT password FROM users WHERE external_identifier = 'exectl-prepare' LIMIT 1")
ts=$(date +%s%3N)
t=$(now)
for i in $(seq 100); do
  docker exec exectl-$stack-postgres psql -q -U exelearning exelearning -c \
    "INSERT INTO users (email, password, roles, is_lopd_accepted, quota_mb, is_active, created_at, updated_at) VALUES ('seed-way-$i@exelearning.net', '$hash', '[\"ROLE_USER\"]', 1, 4096, 1, $ts, $ts) ON CONFLICT (email) DO NOTHING" >/dev/null
done
per=$(echo "$(since "$t") / 100" | bc -l)

# The large run: each round a pattern of its own, from none of its rows, then its --reset, timed.
big=0; big_each=""; big_phases=""; big_added=""; big_reset=0
if [ "$large" -gt 0 ]; then
  for r in $(seq "$rounds"); do
    # Each round on a settled database, as a fresh stack's first large prepare is: the earlier rounds'
    # --reset left 100,000s of dead rows whose autovacuum would otherwise run during this round.
    docker exec exectl-$stack-postgres psql -q -U exelearning exelearning -c 'VACUUM ANALYZE' >/dev/null
    t=$(now); "$exectl" prepare --stack $stack --accounts "$large" --projects "$large" \
      --email-pattern "large-$r-{i}@exelearning.net" --json >"$state/large.json"
    took=$(since "$t")
    big=$(echo "$big + $took" | bc -l)
    big_each="$big_each $(printf '%.2f' "$took")"
    t=$(now); "$exectl" prepare --stack $stack --reset --email-pattern "large-$r-{i}@exelearning.net" >/dev/null
    big_reset=$(echo "$big_reset + $(since "$t")" | bc -l)
  done
  big_added=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["added"]; print(d["accounts"], d["projects"], d.get("documents"))' "$state/large.json")
  big_phases=$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))["ms"]; print(" ".join(f"{k} {v} ms," for k,v in m.items()))' "$state/large.json")
fi

avg_first=$(echo "scale=2; $first / $rounds" | bc -l)
avg_rerun=$(echo "scale=2; $rerun / $rounds" | bc -l)
seed=$(printf '%.1f' "$(echo "$per * 10000" | bc -l)")
echo "ha (2 instances, PostgreSQL), fixture images, $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg), $rounds round(s), $(date -u +%F)"
echo "exectl prepare 10000 accounts / 10000 projects, cost 10, verified: ${avg_first} s (added: $added; last run: $phases)"
echo "exectl prepare re-run (adds nothing, verified):             ${avg_rerun} s"
printf 'seed way: one exec per account: %.0f ms each -> %s s for 10000 (lower bound)\n' "$(echo "$per * 1000" | bc -l)" "$seed"
echo "ratio (seed way / prepare): $(echo "scale=0; $seed / $avg_first" | bc -l)x   target: prepare < 2 s, verification included"
# --reset of the large run on the other databases too (single stacks), once each.
resets=""
if [ "$large" -gt 0 ]; then
  for db in mariadb sqlite; do
    s=$stack-$db
    "$exectl" deploy single --stack "$s" --db "$db" --http-port "${EXECTL_BENCH_HTTP_PORT:-18396}" --nofile 20000 \
      --images images/fixtures.yaml --json >/dev/null || true
    t=$(now); "$exectl" prepare --stack "$s" --accounts "$large" --projects "$large" --json >"$state/large-$db.json"
    made=$(since "$t")
    t=$(now); "$exectl" prepare --stack "$s" --reset >/dev/null
    resets="$resets $db: prepare $(printf '%.2f' "$made") s, --reset $(printf '%.2f' "$(since "$t")") s;"
    "$exectl" teardown --stack "$s" --purge >/dev/null 2>&1 || true
  done
fi

if [ "$large" -gt 0 ]; then
  echo "exectl prepare --reset of those $large accounts (+ projects, documents), PostgreSQL: $(echo "scale=2; $big_reset / $rounds" | bc -l) s   target: seconds"
  echo "the same on single stacks:$resets"
  echo "exectl prepare $large accounts / $large projects (+ Yjs documents), cost 10, verified: $(echo "scale=2; $big / $rounds" | bc -l) s on average (each round:$big_each s; added: $big_added; last run: $big_phases)   target: < 5 s"
fi
