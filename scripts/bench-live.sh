#!/usr/bin/env bash
# Measures the live path: starts one of each service from release binaries on loopback,
# plays PAIRS pairs for SECONDS with frontier-load, and prints moves/s, round-trip p50/p99
# and each service's CPU per move (from /proc: user + system time over the run).
#
#   scripts/test-services.sh scripts/bench-live.sh frontier BIN [PAIRS] [SECONDS]
#       BIN is the `frontier` binary (e.g. target/release/frontier)
#   scripts/test-services.sh scripts/bench-live.sh legacy DIR [PAIRS] [SECONDS]
#       DIR holds the per-service binaries of a build before the one binary existed
#   scripts/bench-live.sh dev BIN [PAIRS] [SECONDS]
#       `frontier dev --memory`: every service in one process (needs no servers)
#
# Uses its own database and namespace; loopback only; stops by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=$1 WHERE=$2 PAIRS=${3:-40} SECONDS_=${4:-20}
TARGET=${CARGO_TARGET_DIR:-target}
LOAD=${LOAD:-$TARGET/release/frontier-load}
NS="bench$$"
admin=${FRONTIER_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}
DB="bench_$$"
[ "$MODE" = dev ] || psql "$admin" -qc "create database $DB"
export FRONTIER_DATABASE_URL="${admin%/*}/$DB"
export FRONTIER_REDIS_URL=${FRONTIER_TEST_REDIS_URL:-redis://127.0.0.1:6379}
export FRONTIER_NATS_URL=${FRONTIER_TEST_NATS_URL:-nats://127.0.0.1:4222}
export FRONTIER_NAMESPACE=$NS
export FRONTIER_JWT_SECRET=bench-secret-0123456789abcdefghijklmnop
# The load tool makes many guests and sends fast: lift the per-connection and per-address
# limits for the run (unknown to builds that have none, so set as variables).
export FRONTIER_WS_RATE=100000 FRONTIER_WS_BURST=100000
export FRONTIER_GUEST_LIMIT=100000/1s FRONTIER_BOARD_LIMIT=100000/1s
export FRONTIER_WAITING_BOARDS=100000 FRONTIER_WS_PER_ADDRESS=100000 FRONTIER_WS_PER_PLAYER=1000
PORT=${BENCH_PORT:-18080}
GW=127.0.0.1:$PORT GS=127.0.0.1:15051 RT=127.0.0.1:15053
pids=() names=()
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true
  psql "$admin" -qc "drop database if exists $DB" >/dev/null 2>&1 || true
}
trap cleanup EXIT
start() { "$@" >/dev/null 2>&1 & pids+=($!); }
if [ "$MODE" = dev ]; then
  started=$(date +%s%N)
  start "$WHERE" dev --memory --listen $GW; names+=(dev)
elif [ "$MODE" = frontier ]; then
  # With their admin endpoints, as deployed: metrics are recorded.
  start "$WHERE" game-session --listen $GS --admin-listen 127.0.0.1:19101; names+=(game-session)
  start "$WHERE" rating --listen $RT --admin-listen 127.0.0.1:19103; names+=(rating)
  start "$WHERE" gateway --listen $GW --game-session-urls http://$GS --rating-url http://$RT --admin-listen 127.0.0.1:19100; names+=(gateway)
  start "$WHERE" clock --game-session-urls http://$GS --admin-listen 127.0.0.1:19102; names+=(clock)
else
  start "$WHERE/game-session" --listen $GS; names+=(game-session)
  start "$WHERE/rating"; names+=(rating)
  start "$WHERE/gateway" --listen $GW --game-session-urls http://$GS; names+=(gateway)
  start "$WHERE/clock" --game-session-urls http://$GS; names+=(clock)
fi
for _ in $(seq 1 400); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.005; done
[ -n "${started:-}" ] && echo "  serving after $(( ($(date +%s%N) - started) / 1000000 )) ms"
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
before=(); for p in "${pids[@]}"; do before+=("$(ticks "$p")"); done
out=$("$LOAD" --addr $GW --pairs "$PAIRS" --seconds "$SECONDS_")
echo "$out"
moves=$(sed -n 's/^\([0-9]*\) moves in.*/\1/p' <<<"$out" | tail -1)
hz=$(getconf CLK_TCK)
for i in "${!pids[@]}"; do
  used=$(( $(ticks "${pids[$i]}") - ${before[$i]} ))
  awk -v n="${names[$i]}" -v t="$used" -v hz="$hz" -v m="$moves" \
    'BEGIN { printf "  %-13s %6.2f s CPU, %5.1f us per move\n", n, t / hz, (m > 0 ? t / hz * 1e6 / m : 0) }'
done
