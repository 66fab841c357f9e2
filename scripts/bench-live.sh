#!/usr/bin/env bash
# Measures the live path: starts one of each service from release binaries on loopback,
# runs frontier-load against them, and prints its table plus each service's CPU per move
# (from /proc: user + system time over the run).
#
#   scripts/test-services.sh scripts/bench-live.sh frontier BIN [PAIRS] [SECONDS] [-- LOAD FLAGS…]
#       BIN is the `frontier` binary (e.g. target/release/frontier)
#   scripts/test-services.sh scripts/bench-live.sh legacy DIR [PAIRS] [SECONDS] [-- …]
#       DIR holds the per-service binaries of a build before the one binary existed
#   scripts/bench-live.sh dev BIN [PAIRS] [SECONDS] [-- …]
#       `frontier dev --memory`: every service in one process (needs no servers)
#
# Flags after `--` go to frontier-load as they are (see `frontier-load --help`), e.g.
#   … frontier target/release/frontier 4 60 -- --idle 19000 --source-addrs 4 --json idle.json
# The gateway's pid is always passed (`--gateway-pid`: its RSS per idle connection), and
# the open-files limit is raised to the hard limit for every process started here.
# BENCH_ALL=1 (frontier mode) also starts matchmaking and a bot-worker, for --matchmaking
# and --bots.
#
# Uses its own database and namespace; loopback only; stops by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=$1 WHERE=$2
shift 2
PAIRS=40 SECONDS_=20
if [ $# -gt 0 ] && [ "$1" != -- ]; then PAIRS=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" != -- ]; then SECONDS_=$1; shift; fi
[ "${1:-}" = -- ] && shift
EXTRA=("$@")
ulimit -n "$(ulimit -Hn)"
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
GW=127.0.0.1:$PORT GS=127.0.0.1:15051 RT=127.0.0.1:15053 MM=127.0.0.1:15054
pids=() names=()
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true
  psql "$admin" -qc "drop database if exists $DB" >/dev/null 2>&1 || true
}
trap cleanup EXIT
# BENCH_LOGS=DIR keeps each service's output in DIR/NAME.log (else it is discarded).
start() {
  local name=$1; shift
  local log=/dev/null; [ -n "${BENCH_LOGS:-}" ] && log=$BENCH_LOGS/$name.log
  "$@" >"$log" 2>&1 & pids+=($!); names+=("$name")
}
gateway_pid=
if [ "$MODE" = dev ]; then
  started=$(date +%s%N)
  start dev "$WHERE" dev --memory --listen $GW; gateway_pid=${pids[-1]}
elif [ "$MODE" = frontier ]; then
  # With their admin endpoints, as deployed: metrics are recorded.
  start game-session "$WHERE" game-session --listen $GS --admin-listen 127.0.0.1:19101
  start rating "$WHERE" rating --listen $RT --admin-listen 127.0.0.1:19103
  mm=()
  if [ -n "${BENCH_ALL:-}" ]; then
    start matchmaking "$WHERE" matchmaking --listen $MM --game-session-urls http://$GS --rating-url http://$RT --admin-listen 127.0.0.1:19105
    start bot-worker "$WHERE" bot-worker --game-session-urls http://$GS --admin-listen 127.0.0.1:19104
    mm=(--matchmaking-url http://$MM)
  fi
  start gateway "$WHERE" gateway --listen $GW --game-session-urls http://$GS --rating-url http://$RT "${mm[@]}" --admin-listen 127.0.0.1:19100; gateway_pid=${pids[-1]}
  start clock "$WHERE" clock --game-session-urls http://$GS --admin-listen 127.0.0.1:19102
else
  start game-session "$WHERE/game-session" --listen $GS
  start rating "$WHERE/rating"
  start gateway "$WHERE/gateway" --listen $GW --game-session-urls http://$GS; gateway_pid=${pids[-1]}
  start clock "$WHERE/clock" --game-session-urls http://$GS
fi
for _ in $(seq 1 400); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.005; done
[ -n "${started:-}" ] && echo "  serving after $(( ($(date +%s%N) - started) / 1000000 )) ms"
echo "  load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
before=(); for p in "${pids[@]}"; do before+=("$(ticks "$p")"); done
# RSS_LOG=FILE: every RSS_EVERY seconds (default 10), one line per service process:
# "seconds name rss_kib cpu_ticks" (the soak reads it for memory flatness).
if [ -n "${RSS_LOG:-}" ]; then
  : >"$RSS_LOG"
  (
    t0=$(date +%s)
    while :; do
      now=$(( $(date +%s) - t0 ))
      for i in "${!pids[@]}"; do
        rss=$(awk '/^VmRSS/ {print $2}' "/proc/${pids[$i]}/status" 2>/dev/null || echo 0)
        echo "$now ${names[$i]} ${rss:-0} $(ticks "${pids[$i]}" 2>/dev/null || echo 0)"
      done >>"$RSS_LOG"
      sleep "${RSS_EVERY:-10}"
    done
  ) &
  sampler=$!
fi
out=$("$LOAD" --addr $GW --pairs "$PAIRS" --seconds "$SECONDS_" --gateway-pid "$gateway_pid" "${EXTRA[@]}")
echo "$out"
[ -n "${sampler:-}" ] && kill "$sampler" 2>/dev/null
moves=$(sed -n 's/^\([0-9]*\) moves in.*/\1/p' <<<"$out" | tail -1)
hz=$(getconf CLK_TCK)
for i in "${!pids[@]}"; do
  used=$(( $(ticks "${pids[$i]}") - ${before[$i]} ))
  awk -v n="${names[$i]}" -v t="$used" -v hz="$hz" -v m="$moves" \
    'BEGIN { printf "  %-13s %6.2f s CPU, %5.1f us per move\n", n, t / hz, (m > 0 ? t / hz * 1e6 / m : 0) }'
done
echo "  load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
