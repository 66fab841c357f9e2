#!/usr/bin/env bash
# Gateway CPU per refused login attempt: refused at accept (default) vs refused after HTTP
# parsing (the same build with 127.0.0.1 a trusted proxy: never refused at accept).
set -u
mkdir -p "${OUT:-/tmp/bench-refusal}"
# Needs the release frontier and frontier-load (cargo build --release -p frontier -p
# frontier-integration-tests --bin frontier --bin frontier-load), Redis, NATS and Postgres
# on their standard ports, curl, bc. MODES picks the alternation.
T=${CARGO_TARGET_DIR:-target}/release
DB=postgres://postgres@127.0.0.1:5432/frontier_acc
psql postgres://postgres@127.0.0.1:5432/postgres -qc 'drop database if exists frontier_acc' -c 'create database frontier_acc' >/dev/null
for mode in ${MODES:-accept http accept http accept http}; do
  extra=()
  [ "$mode" = http ] && extra=(--trusted-proxies 127.0.0.1/32)
  $T/frontier gateway --listen 127.0.0.1:18080 --game-session-urls http://127.0.0.1:50051 \
    --database-url $DB --redis-url redis://127.0.0.1:6379 --nats-url nats://127.0.0.1:4222 \
    --jwt-secret 0123456789abcdef0123456789abcdef0123456789 --namespace acc$RANDOM \
    --admin-listen 127.0.0.1:19100 "${extra[@]}" >${OUT:-/tmp/bench-refusal}/gw-$mode.log 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/18080) 2>/dev/null && break; sleep 0.1; done
  $T/frontier-load --addr 127.0.0.1:18080 --pairs 0 --seconds 22 --login-flood 64 > ${OUT:-/tmp/bench-refusal}/load-$mode.txt 2>&1 &
  lpid=$!
  sleep 2
  c0=$(awk "{print \$14+\$15}" /proc/$pid/stat); u0=$(awk "{print \$14}" /proc/$pid/stat)
  sleep 20
  c1=$(awk "{print \$14+\$15}" /proc/$pid/stat); u1=$(awk "{print \$14}" /proc/$pid/stat)
  wait $lpid
  refused=$(curl -s 127.0.0.1:19100/metrics | grep -E '^frontier_gateway_refusals_total\{reason="(address_at_accept|login_rate)"\}' | tr '\n' ' ')
  echo "$mode user_s=$(( (u1-u0) )) cpu_s_20s=$(echo "($c1-$c0)/100" | bc -l | cut -c1-6) $(grep -i 'login flood' ${OUT:-/tmp/bench-refusal}/load-$mode.txt | head -1) | $refused"
  kill $pid; wait $pid 2>/dev/null
done
