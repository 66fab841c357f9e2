#!/usr/bin/env bash
# The soak: one of each service from release binaries (scripts/bench-live.sh), loaded open
# loop at a fixed move rate for a long time, every service's memory sampled; then a verdict
# on the figures the issue asks for:
#   - memory of every process flat after warm-up: the mean RSS over the last ten minutes
#     within 10% of the mean over the first ten minutes after warm-up (means, because an
#     allocator returns memory in steps: single samples saw-tooth; minimum and maximum are
#     printed too);
#   - no error growth: errors in the second half of the run no more than in the first;
#   - latency stable: the last quarter's p99 (mean of per-second p99) at most 1.5× the
#     first quarter's.
#
#   scripts/test-services.sh scripts/soak.sh BIN [SECONDS] [RATE] [GAMES]
#
# Defaults: 3600 s at 4,000 moves/s (about half the measured saturation, docs/benchmarks.md)
# over 500 games, warm-up 300 s. Output in SOAK_OUT (default target/soak): soak.json and
# soak.svg from frontier-load, rss.log, and verdict.txt. Exits non-zero when a check fails.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$1 SECS=${2:-3600} RATE=${3:-4000} GAMES=${4:-500}
WARMUP=${SOAK_WARMUP:-300}
OUT=${SOAK_OUT:-${CARGO_TARGET_DIR:-target}/soak}
mkdir -p "$OUT"
echo "soak: $SECS s at $RATE moves/s over $GAMES games, warm-up $WARMUP s; output in $OUT"
RSS_LOG=$OUT/rss.log RSS_EVERY=${RSS_EVERY:-10} scripts/bench-live.sh frontier "$BIN" -- \
  --rate "$RATE" --games "$GAMES" --seconds "$SECS" --quiet \
  --json "$OUT/soak.json" --svg "$OUT/soak.svg" | tee "$OUT/run.txt"
python3 - "$OUT" "$WARMUP" "$SECS" <<'PY' | tee "$OUT/verdict.txt"
import json, sys, collections
out, warmup, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ok = True
rss = collections.defaultdict(list)
for line in open(f"{out}/rss.log"):
    t, name, kib, _ticks = line.split()
    rss[name].append((int(t), int(kib)))
print(f"memory (RSS, MiB) after {warmup} s of warm-up:")
print(f"  {'process':13} {'first':>8} {'last':>8} {'min':>8} {'max':>8}  verdict")
for name, samples in rss.items():
    after = [(t, k) for t, k in samples if t >= warmup]
    if len(after) < 2:
        print(f"  {name:13} too few samples after warm-up"); ok = False; continue
    span = after[-1][0] - after[0][0]
    window = min(600, max(1, span // 2))
    first = [k for t, k in after if t < after[0][0] + window]
    last = [k for t, k in after if t > after[-1][0] - window]
    a, b = sum(first) / len(first), sum(last) / len(last)
    flat = abs(b - a) <= a * 0.10
    ok &= flat
    lo, hi = min(k for _, k in after), max(k for _, k in after)
    print(f"  {name:13} {a/1024:8.1f} {b/1024:8.1f} {lo/1024:8.1f} {hi/1024:8.1f}  {'flat' if flat else 'GROWS' if b > a else 'SHRINKS'}")
print(f"  (first, last: mean over the first and the last {window} s after warm-up)")
run = json.load(open(f"{out}/soak.json"))
series = run.get("series", [])
half = len(series) // 2
def errs(rows):
    return sum(r.get("errors", 0) for r in rows)
e1, e2 = errs(series[:half]), errs(series[half:])
grow = e2 > e1
ok &= not grow
print(f"errors: first half {e1}, second half {e2}  {'GROWS' if grow else 'no growth'}")
q = max(1, len(series) // 4)
def p99(rows):
    vals = [r["p99_ms"] for r in rows if r.get("p99_ms") is not None]
    return sum(vals) / len(vals) if vals else float("nan")
a, b = p99(series[:q]), p99(series[-q:])
stable = b <= a * 1.5
ok &= stable
print(f"p99 (mean of per-second p99): first quarter {a:.2f} ms, last quarter {b:.2f} ms  {'stable' if stable else 'DRIFTS'}")
rt = run["round_trip_ms"]
print(f"moves: {run['moves']} in {run['elapsed_s']} s, {run['moves_per_s']} moves/s; "
      f"round trip p50 {rt['p50']} ms, p99 {rt['p99']} ms, max {rt['max']} ms; errors {run['errors']}")
print("SOAK " + ("PASSED" if ok else "FAILED"))
sys.exit(0 if ok else 1)
PY
