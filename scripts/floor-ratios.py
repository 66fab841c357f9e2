#!/usr/bin/env python3
"""Issue 29's table from the runs of ../shared/floor/bench/run.py: for each rate (and tag),
the medians [ranges] of CPU per move of the gateway, game-session, Redis and NATS and of
the per-second p99 on both sides, their ratios (Frontier / floor) and issue 29's targets,
each said met or missed. A verdict needs three runs or more on each side.

    scripts/floor-ratios.py RESULTS/runs.jsonl [--tag TAG] [--rate RATE]
    scripts/floor-ratios.py --self-test

`make floor-compare` prints it after its series. The medians are of the runs' figures as
run.py records them (`us_per_move`, `per_second_p99_ms.median`); nothing is corrected here.
"""

import json
import statistics
import sys

# (column, how a run gives it, target: the most Frontier / floor may be; None: shown only)
COLUMNS = [
    ("gateway µs/move", lambda r: r["us_per_move"]["gateway"], 1.15),
    ("game-session µs/move", lambda r: r["us_per_move"]["session"], 1.15),
    ("Redis µs/move", lambda r: r["us_per_move"]["redis"], 1.0),
    ("NATS µs/move", lambda r: r["us_per_move"]["nats"], None),
    ("per-second p99 ms (median)", lambda r: r["per_second_p99_ms"]["median"], 1.5),
]
MIN_RUNS = 3


def cell(values):
    return f"{statistics.median(values):.1f} [{min(values):.1f}–{max(values):.1f}]"


def table(runs, rate, tag):
    """The table's lines for one group, and whether every target is met (None: too few
    runs on a side to say)."""
    sides = {s: [r for r in runs if r["side"] == s] for s in ("floor", "project")}
    head = f"at {rate:g} moves/s" + (f" (tag {tag})" if tag else "")
    lines = [
        "| " + " | ".join([head] + [c for c, _, _ in COLUMNS]) + " |",
        "|" + "---|" * (len(COLUMNS) + 1),
    ]
    for side, label in (("floor", "floor"), ("project", "Frontier")):
        got = sides[side]
        row = [f"{label} ({len(got)} runs)"]
        row += [cell([f(r) for r in got]) if got else "–" for _, f, _ in COLUMNS]
        lines.append("| " + " | ".join(row) + " |")
    if not sides["floor"] or not sides["project"]:
        lines.append("(one side has no runs: no ratios)")
        return lines, None
    ratios, targets, met = ["ratio"], ["target"], []
    for _, f, target in COLUMNS:
        floor = statistics.median([f(r) for r in sides["floor"]])
        ours = statistics.median([f(r) for r in sides["project"]])
        ratio = ours / floor if floor > 0 else float("inf")
        if target is None:
            ratios.append(f"{ratio:.2f}")
            targets.append("–")
        else:
            ok = ratio <= target
            met.append(ok)
            ratios.append(f"**{ratio:.2f}** ({'met' if ok else 'missed'})")
            targets.append(f"≤ {target:g}")
    lines.append("| " + " | ".join(ratios) + " |")
    lines.append("| " + " | ".join(targets) + " |")
    enough = min(len(sides["floor"]), len(sides["project"])) >= MIN_RUNS
    if not enough:
        lines.append(f"too few runs for a verdict (at least {MIN_RUNS} on each side)")
        return lines, None
    verdict = all(met)
    lines.append("every target met" if verdict else
                 f"{met.count(False)} of {len(met)} targets missed")
    return lines, verdict


def report(runs, want_tag=None, want_rate=None):
    """Every group's table, in rate order; the verdicts by (tag, rate)."""
    groups = {}
    for r in runs:
        if want_tag is not None and r.get("tag") != want_tag:
            continue
        if want_rate is not None and r["rate"] != want_rate:
            continue
        groups.setdefault((r.get("tag") or "", r["rate"], r.get("workers", 1)), []).append(r)
    out, verdicts = [], {}
    for (tag, rate, _workers), group in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        lines, verdict = table(group, rate, tag)
        out += lines + [""]
        verdicts[(tag, rate)] = verdict
    return "\n".join(out), verdicts


def self_test():
    """The verdicts on made-up runs: met, one target missed, and too few runs."""
    def run(side, gw, sess, redis, p99, tag="t", rate=2000):
        return {"side": side, "rate": rate, "workers": 1, "tag": tag,
                "us_per_move": {"gateway": gw, "session": sess, "redis": redis, "nats": 70.0},
                "per_second_p99_ms": {"median": p99, "max": p99 * 2}}
    floor = [run("floor", 100, 80, 30, 4.0) for _ in range(3)]
    good = [run("project", 114, 91, 30, 5.9) for _ in range(3)]
    text, v = report(floor + good)
    assert v == {("t", 2000): True}, v
    assert "every target met" in text and "**1.14** (met)" in text, text
    # Redis a little over the floor's: that target alone is missed.
    slow = [run("project", 114, 91, 31, 5.9) for _ in range(3)]
    text, v = report(floor + slow)
    assert v == {("t", 2000): False}, v
    assert "1 of 4 targets missed" in text and "(missed)" in text, text
    # Medians, not means: one wild run does not decide.
    wild = good[:2] + [run("project", 400, 400, 300, 90.0)]
    assert report(floor + wild)[1] == {("t", 2000): True}
    # Two runs a side give ratios but no verdict; another tag or rate is its own table.
    _, v = report(floor[:2] + good[:2] + [run("floor", 1, 1, 1, 1, tag="u")])
    assert v == {("t", 2000): None, ("u", 2000): None}, v
    assert report(floor + good, want_rate=1000)[1] == {}
    print("floor-ratios: self-test passed")


def main(argv):
    if argv[1:] == ["--self-test"]:
        self_test()
        return 0
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    args = argv[2:]
    opt = {args[i]: args[i + 1] for i in range(0, len(args) - 1, 2)}
    runs = [json.loads(line) for line in open(argv[1]) if line.strip()]
    rate = float(opt["--rate"]) if "--rate" in opt else None
    text, _ = report(runs, opt.get("--tag"), rate)
    print(text if text else "no runs matched")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
