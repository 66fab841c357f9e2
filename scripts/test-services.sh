#!/usr/bin/env bash
# Runs a command with Redis, NATS (JetStream) and Postgres available.
#
# Each server is used where it already answers on its standard loopback port. Where one
# does not, a throwaway server is started on a free port in a temporary folder (installed
# with apt-get first if its binary is missing) and stopped when the command ends. The
# command sees where everything is through FRONTIER_TEST_* variables, and a run id that
# the tests use to give each run its own database, key prefix and subject prefix.
#
#   scripts/test-services.sh cargo test --workspace
set -euo pipefail

RUN_DIR=$(mktemp -d /tmp/frontier-test-XXXXXX)
PIDS=()
export FRONTIER_TEST_RUN="r$(date +%s)$$"

cleanup() {
  local code=$?
  # Drop this run's databases (best effort) before stopping a throwaway Postgres.
  if [ -n "${FRONTIER_TEST_POSTGRES_URL:-}" ] && command -v psql >/dev/null; then
    psql "$FRONTIER_TEST_POSTGRES_URL" -Atc \
      "select datname from pg_database where datname like 'ft_${FRONTIER_TEST_RUN}_%'" 2>/dev/null |
      while read -r db; do psql "$FRONTIER_TEST_POSTGRES_URL" -qc "drop database if exists \"$db\"" >/dev/null 2>&1 || true; done
  fi
  # Remove this run's Redis keys (every test namespace starts with t<run id>-).
  if [ -n "${FRONTIER_TEST_REDIS_URL:-}" ] && command -v redis-cli >/dev/null; then
    redis-cli -u "$FRONTIER_TEST_REDIS_URL" --scan --pattern "t${FRONTIER_TEST_RUN}-*" 2>/dev/null |
      xargs -r -n 500 redis-cli -u "$FRONTIER_TEST_REDIS_URL" del >/dev/null 2>&1 || true
  fi
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  if [ -n "${PG_DATA:-}" ]; then
    runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PG_DATA" -m immediate stop >/dev/null 2>&1 || true
  fi
  rm -rf "$RUN_DIR"
  exit $code
}
trap cleanup EXIT INT TERM

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 100); do port_open "$1" && return 0; sleep 0.1; done; echo "port $1 did not open" >&2; return 1; }

APT_UPDATED=""
ensure() { # ensure BINARY PACKAGE
  command -v "$1" >/dev/null 2>&1 && return 0
  if [ -z "$APT_UPDATED" ]; then apt-get update -qq >/dev/null; APT_UPDATED=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null
}

# Redis
if redis_reply=$( (exec 3<>/dev/tcp/127.0.0.1/6379; printf 'PING\r\n' >&3; timeout 2 head -c 7 <&3) 2>/dev/null ) && [[ "$redis_reply" == +PONG* ]]; then
  export FRONTIER_TEST_REDIS_URL="redis://127.0.0.1:6379"
else
  ensure redis-server redis-server
  port=$(free_port)
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$RUN_DIR" >"$RUN_DIR/redis.log" 2>&1 &
  PIDS+=($!)
  wait_port "$port"
  export FRONTIER_TEST_REDIS_URL="redis://127.0.0.1:$port"
  echo "test-services: started a throwaway Redis on port $port" >&2
fi

# NATS with JetStream
if info=$( (exec 3<>/dev/tcp/127.0.0.1/4222; timeout 2 head -n 1 <&3) 2>/dev/null ) && [[ "$info" == *'"jetstream":true'* ]]; then
  export FRONTIER_TEST_NATS_URL="nats://127.0.0.1:4222"
else
  ensure nats-server nats-server
  port=$(free_port)
  nats-server -a 127.0.0.1 -p "$port" -js -sd "$RUN_DIR/nats" >"$RUN_DIR/nats.log" 2>&1 &
  PIDS+=($!)
  wait_port "$port"
  export FRONTIER_TEST_NATS_URL="nats://127.0.0.1:$port"
  echo "test-services: started a throwaway NATS on port $port" >&2
fi

# Postgres
if port_open 5432 && psql "postgres://postgres@127.0.0.1:5432/postgres" -Atc 'select 1' >/dev/null 2>&1; then
  export FRONTIER_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:5432/postgres"
else
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then ensure psql postgresql; ensure initdb postgresql; fi
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { [ -z "$APT_UPDATED" ] && apt-get update -qq >/dev/null; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; }
  PG_BIN=$(dirname "$(ls /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n 1)")
  id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
  PG_DATA="$RUN_DIR/pg"
  mkdir -p "$PG_DATA" && chown postgres "$RUN_DIR" "$PG_DATA"
  port=$(free_port)
  runuser -u postgres -- "$PG_BIN/initdb" -D "$PG_DATA" -A trust -U postgres >"$RUN_DIR/initdb.log" 2>&1
  runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$RUN_DIR/pg.log" -w \
    -o "-p $port -k $PG_DATA -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
  export FRONTIER_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/postgres"
  echo "test-services: started a throwaway Postgres on port $port" >&2
fi

# The cluster and failover tests start their own servers: a Redis Cluster, a primary with
# replicas and sentinels (`redis-server --sentinel`), a Postgres primary with a streaming
# standby. Their binaries (and a postgres user to run Postgres as), whatever answers above.
ensure redis-server redis-server
ensure redis-cli redis-tools
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  [ -z "$APT_UPDATED" ] && apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres

"$@"
