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


def values(runs, f):
    """A column's figures from these runs (a run without the figure gives none)."""
    return [v for v in (f(r) for r in runs) if v is not None]


def cell(vs):
    if not vs:
        return "–"
    return f"{statistics.median(vs):.1f} [{min(vs):.1f}–{max(vs):.1f}]"


def table(runs, rate, tag, workers):
    """The table's lines for one group, and whether every target is met (None: too few
    runs on a side to say)."""
    sides = {s: [r for r in runs if r["side"] == s] for s in ("floor", "project")}
    head = f"at {rate:g} moves/s, {workers} worker thread(s)" + (f" (tag {tag})" if tag else "")
    lines = [
        "| " + " | ".join([head] + [c for c, _, _ in COLUMNS]) + " |",
        "|" + "---|" * (len(COLUMNS) + 1),
    ]
    for side, label in (("floor", "floor"), ("project", "Frontier")):
        got = sides[side]
        row = [f"{label} ({len(got)} runs)"]
        row += [cell(values(got, f)) for _, f, _ in COLUMNS]
        lines.append("| " + " | ".join(row) + " |")
    if not sides["floor"] or not sides["project"]:
        lines.append("(one side has no runs: no ratios)")
        return lines, None
    # A verdict, and each target said met or missed, only from enough runs on both sides
    # (each column counting the runs that have its figure).
    enough = all(
        min(len(values(sides["floor"], f)), len(values(sides["project"], f))) >= MIN_RUNS
        for _, f, _ in COLUMNS
    )
    ratios, targets, met = ["ratio"], ["target"], []
    for _, f, target in COLUMNS:
        floor_vs, ours_vs = values(sides["floor"], f), values(sides["project"], f)
        if not floor_vs or not ours_vs:
            ratios.append("–")
            targets.append("–" if target is None else f"≤ {target:g}")
            met.append(False)
            continue
        floor, ours = statistics.median(floor_vs), statistics.median(ours_vs)
        ratio = ours / floor if floor > 0 else float("inf")
        if target is None:
            ratios.append(f"{ratio:.2f}")
            targets.append("–")
        else:
            ok = ratio <= target
            met.append(ok)
            ratios.append(f"**{ratio:.2f}**" + (f" ({'met' if ok else 'missed'})" if enough else ""))
            targets.append(f"≤ {target:g}")
    lines.append("| " + " | ".join(ratios) + " |")
    lines.append("| " + " | ".join(targets) + " |")
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
    for (tag, rate, workers), group in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
        lines, verdict = table(group, rate, tag, workers)
        out += lines + [""]
        verdicts[(tag, rate, workers)] = verdict
    return "\n".join(out), verdicts


def self_test():
    """The verdicts on made-up runs, each case one a broken table would get wrong."""
    def run(side, gw, sess, redis, p99, tag="t", rate=2000, workers=1, p99_max=None):
        return {"side": side, "rate": rate, "workers": workers, "tag": tag,
                "us_per_move": {"gateway": gw, "session": sess, "redis": redis, "nats": 70.0},
                "per_second_p99_ms": {"median": p99, "max": p99_max or p99 * 2}}
    key = ("t", 2000, 1)
    floor = [run("floor", 100, 80, 30, 4.0) for _ in range(3)]
    # Every target met, the gateway and game-session just at theirs (1.15, 92/80 = 1.15).
    good = [run("project", 115, 92, 30, 6.0) for _ in range(3)]
    text, v = report(floor + good)
    assert v == {key: True}, v
    assert "every target met" in text and "**1.15** (met)" in text, text
    # Each target alone just missed: gateway, game-session, Redis, p99 (columns not
    # swapped: game-session 1.16 is read from `session`, not from `gateway`).
    for bad, column in ((run("project", 116, 92, 30, 6.0), "gateway"),
                        (run("project", 115, 92.8, 30, 6.0), "game-session"),
                        (run("project", 115, 92, 30.3, 6.0), "Redis"),
                        (run("project", 115, 92, 30, 6.1), "p99")):
        text, v = report(floor + [bad] * 3)
        assert v == {key: False}, (column, v)
        assert "1 of 4 targets missed" in text and "(missed)" in text, (column, text)
        if column == "game-session":
            assert "| ratio | **1.15** (met) | **1.16** (missed) |" in text, text
    # Medians, not means, minima or first runs: 100, 130, 125 misses (median 125) though its
    # first and least run meet; 117, 110, 115 meets (median 115) though its first misses.
    spread = [run("project", g, 92, 30, 6.0) for g in (100, 130, 125)]
    assert "| 125.0 [100.0–130.0] |" in report(floor + spread)[0]
    assert report(floor + spread)[1] == {key: False}
    spread = [run("project", g, 92, 30, 6.0) for g in (117, 110, 115)]
    assert report(floor + spread)[1] == {key: True}
    wild = good[:2] + [run("project", 400, 400, 300, 90.0)]
    assert report(floor + wild)[1] == {key: True}
    # The per-second p99 is its median over the run, not its worst second.
    tail = [run("project", 115, 92, 30, 6.0, p99_max=500.0) for _ in range(3)]
    assert report(floor + tail)[1] == {key: True}
    # Three runs on each side: two floor runs beside five of ours give ratios but neither a
    # verdict nor a met/missed; another tag, rate or worker count is its own table.
    text, v = report(floor[:2] + good * 2)
    assert v == {key: None} and "(met)" not in text and "too few runs" in text, text
    others = [run("floor", 1, 1, 1, 1, tag="u"), run("floor", 1, 1, 1, 1, workers=2)]
    _, v = report(floor + good + others)
    assert v == {key: True, ("u", 2000, 1): None, ("t", 2000, 2): None}, v
    assert report(floor + good, want_rate=1000)[1] == {}
    # A run without a p99 (no second measured) counts for the other columns only.
    holed = good + [dict(run("project", 115, 92, 30, 6.0), per_second_p99_ms={"median": None})]
    assert report(floor + holed)[1] == {key: True}
    # From the command line, on a file, with --tag and --rate.
    import os
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "runs.jsonl")
        with open(path, "w") as out:
            for r in floor + good + [run("floor", 1, 1, 1, 1, rate=1000)]:
                out.write(json.dumps(r) + "\n")
        printed = subprocess.run([sys.executable, __file__, path, "--tag", "t", "--rate", "2000"],
                                 capture_output=True, text=True, check=True).stdout
        assert "every target met" in printed and "at 1000" not in printed, printed
        printed = subprocess.run([sys.executable, __file__, path, "--tag", "x"],
                                 capture_output=True, text=True, check=True).stdout
        assert printed.strip() == "no runs matched", printed
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
