#!/usr/bin/env bash
# Starts every service built so far on fixed loopback ports, against the Redis, NATS and
# Postgres that scripts/test-services.sh found or started. Used by `make run`.
set -euo pipefail
cd "$(dirname "$0")/.."

GATEWAY_ADDR=${FRONTIER_GATEWAY_LISTEN:-127.0.0.1:8080}
SESSION_ADDR=${FRONTIER_GAME_SESSION_LISTEN:-127.0.0.1:50051}
RATING_ADDR=${FRONTIER_RATING_LISTEN:-127.0.0.1:50053}
MATCHMAKING_ADDR=${FRONTIER_MATCHMAKING_LISTEN:-127.0.0.1:50054}
TARGET=${CARGO_TARGET_DIR:-target}

# One binary, every service a subcommand; a release build has no test hooks.
cargo build --release -p frontier

admin=${FRONTIER_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}
database_url=${FRONTIER_DATABASE_URL:-${admin%/*}/frontier}
if ! psql "$admin" -Atc "select 1 from pg_database where datname = 'frontier'" | grep -q 1; then
  psql "$admin" -qc 'create database frontier'
fi
# A database made before migrations/ was split by owner needs its bookkeeping moved once
# (a no-op otherwise).
psql "$database_url" -q -v ON_ERROR_STOP=1 -f migrations/adopt-split.sql

export FRONTIER_REDIS_URL=${FRONTIER_REDIS_URL:-${FRONTIER_TEST_REDIS_URL:-redis://127.0.0.1:6379}}
export FRONTIER_NATS_URL=${FRONTIER_NATS_URL:-${FRONTIER_TEST_NATS_URL:-nats://127.0.0.1:4222}}
export FRONTIER_DATABASE_URL=$database_url
# A development secret unless one is given: tokens do not survive a restart.
export FRONTIER_JWT_SECRET=${FRONTIER_JWT_SECRET:-$(head -c 48 /dev/urandom | base64 | tr -d '\n')}
export FRONTIER_PUBLIC_URL=${FRONTIER_PUBLIC_URL:-http://$GATEWAY_ADDR}

pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait' EXIT INT TERM
# Each service's admin endpoints (/metrics, /healthz, /readyz) on its own port.
"$TARGET/release/frontier" game-session --listen "$SESSION_ADDR" --admin-listen 127.0.0.1:9101 & pids+=($!)
"$TARGET/release/frontier" rating --listen "$RATING_ADDR" --admin-listen 127.0.0.1:9103 & pids+=($!)
"$TARGET/release/frontier" matchmaking --listen "$MATCHMAKING_ADDR" --game-session-urls "http://$SESSION_ADDR" --rating-url "http://$RATING_ADDR" --admin-listen 127.0.0.1:9105 & pids+=($!)
"$TARGET/release/frontier" gateway --listen "$GATEWAY_ADDR" --game-session-urls "http://$SESSION_ADDR" --rating-url "http://$RATING_ADDR" --matchmaking-url "http://$MATCHMAKING_ADDR" --admin-listen 127.0.0.1:9100 & pids+=($!)
"$TARGET/release/frontier" clock --game-session-urls "http://$SESSION_ADDR" --admin-listen 127.0.0.1:9102 & pids+=($!)
"$TARGET/release/frontier" bot-worker --game-session-urls "http://$SESSION_ADDR" --admin-listen 127.0.0.1:9104 & pids+=($!)

for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/${GATEWAY_ADDR%:*}/${GATEWAY_ADDR#*:}") 2>/dev/null && break; sleep 0.1; done
cat <<INFO

Frontier is running.
  WebSocket:  ws://$GATEWAY_ADDR/ws/v1
  HTTP API:   http://$GATEWAY_ADDR/api/guest  /api/register  /api/login
  game-session (gRPC, internal): http://$SESSION_ADDR
  rating read API (gRPC, internal): http://$RATING_ADDR
  matchmaking (gRPC, internal): http://$MATCHMAKING_ADDR
  admin (/metrics, /healthz, /readyz): gateway http://127.0.0.1:9100, game-session :9101,
    clock :9102, rating :9103, bot-worker :9104, matchmaking :9105
Press Ctrl-C to stop.
INFO
wait
