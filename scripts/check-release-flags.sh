#!/usr/bin/env bash
# A build without the `test-hooks` feature (as release builds and images are) must refuse
# every test-only switch: the flags do not exist, and their environment variables stop the
# service at start. Builds `frontier` on its own (so no test crate turns the feature on)
# and tries each. Run by `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
TARGET=${CARGO_TARGET_DIR:-target}
$CARGO build --quiet -p frontier --bin frontier
bin="$TARGET/debug/frontier"
status=0 passed=0 failed=0

refuses() { # refuses WHAT EXPECTED-TEXT -- COMMAND...
  local what=$1 expected=$2; shift 3
  local out code=0
  out=$("$@" 2>&1) || code=$?
  if [ "$code" -eq 0 ] || ! grep -q -- "$expected" <<<"$out"; then
    echo "check-release-flags: $what was not refused (exit $code): $out" >&2
    status=1 failed=$((failed + 1))
  else
    passed=$((passed + 1))
  fi
}

for flag in "game-session --test-fixed-layout RNBQBNRPPPPPPPP/rnbqbnrpppppppp" \
            "game-session --test-clock-minute 1s" \
            "game-session --test-start-fen standard:8/8/8/8/8/8/8/K1k5_w_-_-_0_1" \
            "rating --test-hang-after-commit" \
            "bot-worker --test-think-delay 1s"; do
  # shellcheck disable=SC2086
  refuses "flag '$flag'" "unexpected argument" -- "$bin" $flag
done
# The variables are refused before any connection is tried (the URLs point nowhere).
for var in FRONTIER_TEST_FIXED_LAYOUT FRONTIER_TEST_CLOCK_MINUTE FRONTIER_TEST_START_FEN; do
  refuses "variable $var" "test-only setting" -- env "$var=x" "$bin" game-session \
    --listen 127.0.0.1:0 --redis-url redis://127.0.0.1:1 --nats-url nats://127.0.0.1:1
done
refuses "variable FRONTIER_TEST_HANG_AFTER_COMMIT" "test-only setting" -- \
  env FRONTIER_TEST_HANG_AFTER_COMMIT=true "$bin" rating \
  --database-url postgres://nobody@127.0.0.1:1/none --nats-url nats://127.0.0.1:1

refuses "variable FRONTIER_TEST_THINK_DELAY" "test-only setting" -- \
  env FRONTIER_TEST_THINK_DELAY=1s "$bin" bot-worker --nats-url nats://127.0.0.1:1

# `frontier dev` refuses them too, before it starts anything (a dev that ignored one would
# start and serve: `timeout` ends it, and the check fails).
dev_data=$(mktemp -d)
for var in FRONTIER_TEST_FIXED_LAYOUT FRONTIER_TEST_CLOCK_MINUTE FRONTIER_TEST_START_FEN \
           FRONTIER_TEST_HANG_AFTER_COMMIT FRONTIER_TEST_THINK_DELAY FRONTIER_TEST_MAX_NODES; do
  refuses "variable $var in dev" "test-only setting" -- env "$var=x" timeout 20 "$bin" dev \
    --memory --listen 127.0.0.1:0 --data "$dev_data"
done
rm -rf "$dev_data"

[ "$status" -eq 0 ] && echo "check-release-flags: every test-only switch is refused without test-hooks"
echo "release-flags: $passed passed, $failed failed"
exit $status
