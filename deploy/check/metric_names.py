#!/usr/bin/env python3
"""Every metric name the chart's alerts and dashboards query must be one a service exports.

    metric_names.py --static          against the names the Rust sources of services/ and
                                      libs/ define (`counter!`/`gauge!`/`histogram!` and any
                                      other "frontier_…" string literal): catches typos
                                      offline (make deploy-check runs it)
    metric_names.py --scrapes DIR     against scraped `/metrics` texts, one file per service
                                      (any name; every file in DIR is read)
    metric_names.py --list            the names queried, and where

The queries: every `expr` of the PrometheusRule (the chart rendered with the default values
and metrics.prometheusRule.enabled) and of every dashboard panel and variable
(deploy/helm/frontier/dashboards/*.json). A name is taken from a PromQL expression by a
small lexer: strings, label matchers `{…}`, ranges `[…]`, grouping label lists
(`by (…)`, `on (…)`, …), Grafana variables (`$x`), numbers and durations are skipped, and
an identifier followed by `(` is a function or aggregation. What is left is a metric name.

A histogram `x` is queried as `x_bucket`, `x_sum` or `x_count`, and exported as those: a
scrape lists them as samples (and `# TYPE x histogram`), a source defines `x` with
`histogram!`, which stands for the three. So `x_bucket` of a counter, or a bare `x` of a
histogram, is reported like a typo.

Names not exported by Frontier (the scrape's `up`, kube-state-metrics) are listed in
EXTERNAL; any other name not starting with `frontier_` fails.

Exit status 1 with the list of names no service exports, and where each is queried.
With --scrapes, a name missing from the scrapes but defined in the sources is said to be
so: a counter of the `metrics` crate appears on /metrics only once it was first recorded
(`--defined-ok` accepts those, listing them).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = ROOT / "deploy" / "helm" / "frontier" / "dashboards"
SOURCES = [ROOT / "services", ROOT / "libs"]

# Series the queries read that no Frontier service exports: Prometheus's own `up` (one per
# scraped target) and kube-state-metrics' (v2 names and labels).
EXTERNAL = {
    "up",
    "kube_deployment_spec_replicas",
    "kube_deployment_status_replicas_available",
    "kube_deployment_status_replicas_unavailable",
    "kube_horizontalpodautoscaler_status_current_replicas",
    "kube_horizontalpodautoscaler_spec_max_replicas",
}

AGGREGATORS = {
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
    "bottomk", "topk", "quantile", "limitk", "limit_ratio",
}
KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool",
    "and", "or", "unless", "offset", "atan2", "inf", "nan", "Inf", "NaN",
}
LABEL_LISTS = {"by", "without", "on", "ignoring", "group_left", "group_right"}

IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
NUMBER = re.compile(r"(0x[0-9a-fA-F]+|[0-9][0-9a-zA-Z_.]*(e[+-]?[0-9]+)?)")


class PromQLError(ValueError):
    pass


def _skip_string(s: str, i: int) -> int:
    quote = s[i]
    i += 1
    while i < len(s):
        if s[i] == "\\" and quote != "`":
            i += 2
            continue
        if s[i] == quote:
            return i + 1
        i += 1
    raise PromQLError(f"unterminated string in {s!r}")


def _skip_group(s: str, i: int, open_: str, close: str) -> tuple[int, str]:
    """From s[i] == open_ to after its matching close; returns (end, inner text)."""
    depth, start = 0, i
    while i < len(s):
        c = s[i]
        if c in "\"'`":
            i = _skip_string(s, i)
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i + 1, s[start + 1 : i]
        i += 1
    raise PromQLError(f"unbalanced {open_}{close} in {s!r}")


def _next_nonspace(s: str, i: int) -> int:
    while i < len(s) and s[i].isspace():
        i += 1
    return i


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads."""
    names: set[str] = set()
    s, i = expr, 0
    while i < len(s):
        c = s[i]
        if c.isspace():
            i += 1
        elif c == "#":  # a comment, to the end of the line
            while i < len(s) and s[i] != "\n":
                i += 1
        elif c in "\"'`":
            i = _skip_string(s, i)
        elif c == "{":
            i, inner = _skip_group(s, i, "{", "}")
            # `{__name__="x"}`: a name given as a matcher.
            for m in re.finditer(r'__name__\s*(=~|!=|!~|=)\s*"([^"]*)"', inner):
                if m.group(1) != "=":
                    raise PromQLError(f"a __name__ matcher other than = cannot be checked: {expr!r}")
                names.add(m.group(2))
        elif c == "[":
            i, _ = _skip_group(s, i, "[", "]")
        elif c == "$":  # a Grafana variable: $x, ${x}, [[x]] is not used here
            i += 1
            if i < len(s) and s[i] == "{":
                i, _ = _skip_group(s, i, "{", "}")
            else:
                m = IDENT.match(s, i)
                i = m.end() if m else i
        elif c.isdigit() or (c == "." and i + 1 < len(s) and s[i + 1].isdigit()):
            m = NUMBER.match(s, i)
            i = m.end() if m else i + 1
        elif IDENT.match(s, i):
            m = IDENT.match(s, i)
            word, i = m.group(0), m.end()
            j = _next_nonspace(s, i)
            following = s[j] if j < len(s) else ""
            if word in LABEL_LISTS:
                if following == "(":
                    i, _ = _skip_group(s, j, "(", ")")
            elif word in KEYWORDS:
                pass
            elif following == "(":
                pass  # a function, or an aggregation written `sum(…)`
            elif word in AGGREGATORS and IDENT.match(s, j) and IDENT.match(s, j).group(0) in ("by", "without"):
                pass  # `sum by (…) (…)`
            else:
                names.add(word)
        else:
            i += 1
    return names


# ---------------------------------------------------------------------------------------
# What is queried


def rule_queries(objects: list[dict] | None = None) -> dict[str, str]:
    """Each alert's expression, from the chart rendered with its rules on."""
    if objects is None:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import deploy  # noqa: E402  (this directory)

        objects = deploy.render({"metrics": {"prometheusRule": {"enabled": True}}})
    queries = {}
    for obj in objects:
        if obj["kind"] != "PrometheusRule":
            continue
        for group in obj["spec"]["groups"]:
            for rule in group["rules"]:
                queries[f"alert {rule.get('alert') or rule.get('record')}"] = rule["expr"]
    if not queries:
        raise SystemExit("metric_names: the chart rendered no PrometheusRule rules")
    return queries


def dashboard_queries(folder: Path = DASHBOARDS) -> dict[str, str]:
    """Each panel target's expression (and variable query) of every dashboard."""
    queries = {}
    files = sorted(folder.glob("*.json"))
    if not files:
        raise SystemExit(f"metric_names: no dashboards in {folder}")
    for path in files:
        board = json.loads(path.read_text())

        def panels(items):
            for p in items:
                yield p
                yield from panels(p.get("panels", []))

        for panel in panels(board.get("panels", [])):
            for n, target in enumerate(panel.get("targets", [])):
                if target.get("expr"):
                    queries[f"dashboard {path.name}: panel {panel.get('title')!r} #{n}"] = target["expr"]
        for var in board.get("templating", {}).get("list", []):
            q = var.get("query")
            if var.get("type") == "query" and isinstance(q, (str, dict)):
                q = q if isinstance(q, str) else q.get("query", "")
                m = re.fullmatch(r"\s*(?:label_values|query_result|metrics)\((.*)\)\s*", q, re.S)
                if m:
                    queries[f"dashboard {path.name}: variable {var.get('name')}"] = m.group(1)
    return queries


def queried(objects: list[dict] | None = None) -> dict[str, set[str]]:
    """Metric name -> where it is queried."""
    where: dict[str, set[str]] = {}
    for place, expr in {**rule_queries(objects), **dashboard_queries()}.items():
        for name in metric_names(expr):
            where.setdefault(name, set()).add(place)
    return where


# ---------------------------------------------------------------------------------------
# What is exported

MACRO = re.compile(r'\b(counter|gauge|histogram)!\(\s*"(frontier_[A-Za-z0-9_:]+)"')
LITERAL = re.compile(r'"(frontier_[A-Za-z0-9_:]+)"')


def histogram_series(name: str) -> set[str]:
    return {f"{name}_bucket", f"{name}_sum", f"{name}_count"}


def exported_static(roots: list[Path] = SOURCES) -> set[str]:
    """The names the Rust sources define: a histogram as its three series."""
    names: set[str] = set()
    for root in roots:
        for path in root.rglob("*.rs"):
            if "target" in path.parts:
                continue
            text = path.read_text(errors="replace")
            in_macro = set()
            for m in MACRO.finditer(text):
                in_macro.add(m.group(2))
                names |= histogram_series(m.group(2)) if m.group(1) == "histogram" else {m.group(2)}
            for m in LITERAL.finditer(text):
                if m.group(1) not in in_macro:
                    names.add(m.group(1))
    return names


def exported_scrapes(folder: Path) -> set[str]:
    """The names in Prometheus text files: every sample's name, and each declared type's."""
    files = [p for p in sorted(folder.iterdir()) if p.is_file()]
    if not files:
        raise SystemExit(f"metric_names: no scraped files in {folder}")
    names: set[str] = set()
    for path in files:
        for line in path.read_text(errors="replace").splitlines():
            line = line.strip()
            if line.startswith("# TYPE "):
                parts = line.split()
                if len(parts) >= 4:
                    name, kind = parts[2], parts[3]
                    if kind == "histogram":
                        names |= histogram_series(name)
                    elif kind == "summary":
                        names |= {name, f"{name}_sum", f"{name}_count"}
                    else:
                        names.add(name)
            elif line and not line.startswith("#"):
                m = IDENT.match(line)
                if m:
                    names.add(m.group(0))
    return names


def missing(where: dict[str, set[str]], exported: set[str]) -> dict[str, set[str]]:
    """Queried names that are neither exported nor listed external."""
    return {n: p for n, p in where.items() if n not in exported and n not in EXTERNAL}


def unknown_external(where: dict[str, set[str]]) -> list[str]:
    return sorted(n for n in where if not n.startswith("frontier_") and n not in EXTERNAL)


def report(problems: dict[str, set[str]], label: str) -> None:
    for name in sorted(problems):
        print(f"  {label}: {name}", file=sys.stderr)
        for place in sorted(problems[name]):
            print(f"      queried by {place}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--static", action="store_true", help="check against the Rust sources")
    mode.add_argument("--scrapes", type=Path, metavar="DIR", help="check against scraped /metrics files")
    mode.add_argument("--list", action="store_true", help="print the queried names and where")
    ap.add_argument("--defined-ok", action="store_true",
                    help="with --scrapes: accept a name the sources define though no scrape has it yet")
    ap.add_argument("--unrecorded-ok", default="", metavar="NAMES",
                    help="with --scrapes: comma-separated names (as queried, e.g. x_bucket) that need an "
                         "event the scraped processes did not have; accepted only if the sources define them")
    args = ap.parse_args(argv)

    where = queried()
    if args.list:
        for name in sorted(where):
            tag = " (external)" if name in EXTERNAL else ""
            print(f"{name}{tag}")
            for place in sorted(where[name]):
                print(f"    {place}")
        return 0

    failed = False
    strange = unknown_external(where)
    if strange:
        failed = True
        print("metric_names: names that are neither frontier_* nor listed in EXTERNAL:", file=sys.stderr)
        report({n: where[n] for n in strange}, "unknown")
    if args.static:
        gone = missing(where, exported_static())
        if gone:
            failed = True
            print("metric_names: queried names that no source under services/ or libs/ defines:", file=sys.stderr)
            report(gone, "missing")
    else:
        gone = missing(where, exported_scrapes(args.scrapes))
        defined = exported_static()
        lazy = {n: p for n, p in gone.items() if n in defined}
        typos = {n: p for n, p in gone.items() if n not in defined}
        if typos:
            failed = True
            print(f"metric_names: queried names that no file in {args.scrapes} exports (nor any source defines):",
                  file=sys.stderr)
            report(typos, "missing")
        if lazy:
            print(f"metric_names: queried names defined in the sources but not in any file of {args.scrapes} "
                  "(not recorded yet by the scraped processes):", file=sys.stderr)
            report(lazy, "not yet recorded")
            allowed = {n for n in args.unrecorded_ok.split(",") if n}
            failed = failed or not (args.defined_ok or set(lazy) <= allowed)
    ours = sorted(n for n in where if n not in EXTERNAL)
    if failed:
        return 1
    print(f"metric_names: all {len(ours)} frontier metric names queried by the alerts and dashboards are exported "
          f"({'sources' if args.static else args.scrapes}); external: {', '.join(sorted(n for n in where if n in EXTERNAL))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
