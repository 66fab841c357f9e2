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
# BENCH_OFFSET=N moves every port by N, so that two runs can go side by side (an A/B
# comparison under the same machine load: see docs/benchmarks.md).
OFF=${BENCH_OFFSET:-0}
PORT=${BENCH_PORT:-$((18080 + OFF))}
GW=127.0.0.1:$PORT GS=127.0.0.1:$((15051 + OFF)) RT=127.0.0.1:$((15053 + OFF)) MM=127.0.0.1:$((15054 + OFF))
pids=() names=() owned=()
cleanup() {
  for i in "${!pids[@]}"; do [ "${owned[$i]}" = yes ] && kill "${pids[$i]}" 2>/dev/null; done
  wait 2>/dev/null || true
  psql "$admin" -qc "drop database if exists $DB" >/dev/null 2>&1 || true
  # This run's keys (games that were still playing when it stopped), on a single node.
  case "$FRONTIER_REDIS_URL" in *,*) ;; *)
    redis-cli -u "$FRONTIER_REDIS_URL" --scan --pattern "$NS:*" 2>/dev/null |
      xargs -r -n 500 redis-cli -u "$FRONTIER_REDIS_URL" del >/dev/null 2>&1 || true ;;
  esac
}
trap cleanup EXIT
# BENCH_LOGS=DIR keeps each service's output in DIR/NAME.log (else it is discarded).
start() {
  local name=$1; shift
  local log=/dev/null; [ -n "${BENCH_LOGS:-}" ] && log=$BENCH_LOGS/$name.log
  "$@" >"$log" 2>&1 & pids+=($!); names+=("$name"); owned+=(yes)
}
gateway_pid=
if [ "$MODE" = dev ]; then
  started=$(date +%s%N)
  start dev "$WHERE" dev --memory --listen $GW; gateway_pid=${pids[-1]}
elif [ "$MODE" = frontier ]; then
  # With their admin endpoints, as deployed: metrics are recorded.
  start game-session "$WHERE" game-session --listen $GS --admin-listen 127.0.0.1:$((19101 + OFF))
  start rating "$WHERE" rating --listen $RT --admin-listen 127.0.0.1:$((19103 + OFF))
  mm=()
  if [ -n "${BENCH_ALL:-}" ]; then
    start matchmaking "$WHERE" matchmaking --listen $MM --game-session-urls http://$GS --rating-url http://$RT --admin-listen 127.0.0.1:$((19105 + OFF))
    start bot-worker "$WHERE" bot-worker --game-session-urls http://$GS --admin-listen 127.0.0.1:$((19104 + OFF))
    mm=(--matchmaking-url http://$MM)
  fi
  start gateway "$WHERE" gateway --listen $GW --game-session-urls http://$GS --rating-url http://$RT "${mm[@]}" --admin-listen 127.0.0.1:$((19100 + OFF)); gateway_pid=${pids[-1]}
  start clock "$WHERE" clock --game-session-urls http://$GS --admin-listen 127.0.0.1:$((19102 + OFF))
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
# Context switches (every thread's, voluntary and not) of a process so far.
switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ {n += $2} END {print n + 0}'; }
# The Redis and NATS servers the services use (by their ports), so that their CPU per move
# is counted too; where one cannot be found (another user's process), it is left out.
server_pid() { # URL
  local port=${1##*:}; port=${port%%/*}; port=${port%%,*}
  ss -Hltnp "sport = :$port" 2>/dev/null | sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -1
}
for server in redis:"$FRONTIER_REDIS_URL" nats:"$FRONTIER_NATS_URL"; do
  pid=$(server_pid "${server#*:}")
  [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] && { pids+=("$pid"); names+=("${server%%:*}"); owned+=(no); }
done
snapshot() {
  before=(); switches_before=()
  for p in "${pids[@]}"; do
    before+=("$(ticks "$p")"); switches_before+=("$(switches "$p")")
  done
}
snapshot
# Every process measured here, for the load tool's own CPU lines (`--cpu-pid`: with --idle,
# what an idle connection costs each).
CPU_PIDS=()
for i in "${!pids[@]}"; do CPU_PIDS+=(--cpu-pid "${names[$i]}=${pids[$i]}"); done
# RSS_LOG=FILE: every RSS_EVERY seconds (default 10), one line per service process:
# "seconds name rss_kib cpu_ticks" (the soak reads it for memory flatness); the services
# started here only, not Redis and NATS.
if [ -n "${RSS_LOG:-}" ]; then
  : >"$RSS_LOG"
  (
    t0=$(date +%s)
    while :; do
      now=$(( $(date +%s) - t0 ))
      for i in "${!pids[@]}"; do
        [ "${owned[$i]}" = yes ] || continue
        rss=$(awk '/^VmRSS/ {print $2}' "/proc/${pids[$i]}/status" 2>/dev/null || echo 0)
        echo "$now ${names[$i]} ${rss:-0} $(ticks "${pids[$i]}" 2>/dev/null || echo 0)"
      done >>"$RSS_LOG"
      sleep "${RSS_EVERY:-10}"
    done
  ) &
  sampler=$!
fi
# BENCH_WARMUP=S: the CPU per move counts only the seconds after the first S of the run
# (setting up guests, connections and games is then left out; the moves are those of the
# load tool's per-second series after S). Not with a --json of the caller's own.
if [ -n "${BENCH_WARMUP:-}" ]; then
  series=$(mktemp /tmp/bench-series-XXXXXX.json)
  "$LOAD" --addr $GW --pairs "$PAIRS" --seconds "$SECONDS_" --gateway-pid "$gateway_pid" "${CPU_PIDS[@]}" "${EXTRA[@]}" --json "$series" >"$series.out" &
  load_pid=$!
  sleep "$BENCH_WARMUP"
  snapshot
  wait "$load_pid" || true
  out=$(cat "$series.out")
  moves=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); w=float(sys.argv[2]); print(sum(s["moves"] for s in d["series"] if s["t"] > w))' "$series" "$BENCH_WARMUP")
  steady=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); w=float(sys.argv[2]); s=[x for x in d["series"] if x["t"] > w]; print("after the first %s s: %.0f moves/s, per-second p99 at most %.2f ms, median %.2f ms" % (sys.argv[2], sum(x["moves"] for x in s) / max(len(s), 1), max([x["p99_ms"] for x in s] or [0]), sorted(x["p99_ms"] for x in s)[len(s) // 2] if s else 0))' "$series" "$BENCH_WARMUP")
  rm -f "$series" "$series.out"
  echo "$out"
  echo "  steady state   $steady"
else
  out=$("$LOAD" --addr $GW --pairs "$PAIRS" --seconds "$SECONDS_" --gateway-pid "$gateway_pid" "${CPU_PIDS[@]}" "${EXTRA[@]}")
  echo "$out"
  moves=$(sed -n 's/^\([0-9]*\) moves in.*/\1/p' <<<"$out" | tail -1)
fi
[ -n "${sampler:-}" ] && kill "$sampler" 2>/dev/null
hz=$(getconf CLK_TCK)
for i in "${!pids[@]}"; do
  used=$(( $(ticks "${pids[$i]}") - ${before[$i]} ))
  sw=$(( $(switches "${pids[$i]}") - ${switches_before[$i]} ))
  awk -v n="${names[$i]}" -v t="$used" -v hz="$hz" -v m="$moves" -v w="$sw" \
    'BEGIN { m = (m > 0 ? m : 1); printf "  %-13s %6.2f s CPU, %5.1f us per move, %4.2f context switches per move\n", n, t / hz, t / hz * 1e6 / m, w / m }'
done
echo "  load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
