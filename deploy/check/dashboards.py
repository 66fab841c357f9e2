#!/usr/bin/env python3
"""Generates the chart's Grafana dashboards (deploy/helm/frontier/dashboards/*.json).

    dashboards.py           writes them
    dashboards.py --check   fails when a file differs from what this script generates
                            (make deploy-check runs it)

One overview and one dashboard per service, written from the panel lists below so that
they stay consistent (same variables, selectors, layout). Edit this script, not the JSON.

Each dashboard has three variables: the data source, `namespace` and `release` (text
boxes; the chart's ConfigMap template replaces their defaults, `__NAMESPACE__` and
`__FULLNAME__`, with the release's namespace and full name). A service's metrics are
selected as the chart's ServiceMonitor scrapes them: `namespace="$namespace",
job="$release-<service>"` (the Prometheus operator renames the gRPC metrics' own `service`
label `exported_service`, so it is not used).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "deploy" / "helm" / "frontier" / "dashboards"

RATE = "$__rate_interval"
DS = {"type": "prometheus", "uid": "${datasource}"}


def job(component: str) -> str:
    return f'namespace="$namespace", job="$release-{component}"'


GW, GS, CLOCK, RATING, BOT, MM, FP = (job(c) for c in ("gateway", "game-session", "clock", "rating", "bot-worker", "matchmaking",
                                                       "fairplay"))
ALL = 'namespace="$namespace", job=~"$release-(gateway|game-session|clock|rating|bot-worker|matchmaking|fairplay)"'
DEPLOY = 'namespace="$namespace", deployment=~"$release-(gateway|game-session|clock|rating|bot-worker|matchmaking|fairplay)"'


def q(expr: str, legend: str = "") -> dict:
    return {"expr": expr, "legend": legend}


def quantiles(metric: str, sel: str, by: str = "", label: str = "") -> list[dict]:
    grouping = f"{by}, le" if by else "le"
    prefix = f"{{{{{by}}}}} " if by else (f"{label} " if label else "")
    return [
        q(f"histogram_quantile({p}, sum by ({grouping}) (rate({metric}_bucket{{{sel}}}[{RATE}])))", f"{prefix}p{int(p * 100)}")
        for p in (0.5, 0.99)
    ]


def stat(title: str, expr: str, unit: str = "short", description: str = "") -> dict:
    return {"kind": "stat", "title": title, "targets": [q(expr)], "unit": unit, "description": description}


def series(title: str, targets: list[dict], unit: str = "short", description: str = "") -> dict:
    return {"kind": "timeseries", "title": title, "targets": targets, "unit": unit, "description": description}


def grpc_panels(sel: str) -> list[dict]:
    return [
        series("gRPC calls/s by method", [q(f'sum by (method) (rate(frontier_grpc_server_requests_total{{{sel}}}[{RATE}]))', "{{method}}")], "reqps"),
        series("gRPC calls/s answered with a non-OK code, by method and code",
               [q(f'sum by (method, code) (rate(frontier_grpc_server_requests_total{{{sel}, code!="0"}}[{RATE}]))', "{{method}} {{code}}")], "reqps",
               "Refusals (a client's mistake: 3, 5, 7, 8, 9) and server errors (2, 4, 12, 13, 14, 15, transport) alike; "
               "the alert FrontierGrpcErrors counts only the second kind."),
        series("gRPC latency p50 / p99 by method",
               quantiles("frontier_grpc_server_duration_seconds", sel, by="method"), "s"),
    ]


def up_panel(component: str) -> dict:
    return series("Targets up and pods ready", [
        q(f"sum(up{{{job(component)}}})", "targets up"),
        q(f'sum(kube_deployment_status_replicas_available{{namespace="$namespace", deployment="$release-{component}"}})', "pods ready"),
        q(f'sum(kube_deployment_spec_replicas{{namespace="$namespace", deployment="$release-{component}"}})', "pods wanted"),
    ], description="`up` from the ServiceMonitor's scrapes; pods from kube-state-metrics.")


BOARDS: dict[str, tuple[str, list[dict]]] = {
    "overview": ("Frontier / Overview", [
        stat("WebSocket connections", f"sum(frontier_gateway_ws_connections{{{GW}}})",
             description="Open WebSockets over every gateway. A player may hold several (tabs); no metric counts players."),
        stat("Games with a running clock", f"max(frontier_clock_deadlines_tracked{{{CLOCK}}})",
             description="Deadlines the clock tracks (scheduled and claimed), every variant together: live games whose clock runs. "
                         "No metric counts live games by variant; the panel beside it shows games started and finished by variant."),
        stat("Moves/s", f"sum(rate(frontier_game_session_moves_total{{{GS}}}[{RATE}]))", "ops"),
        stat("Pods not ready", f"sum(kube_deployment_status_replicas_unavailable{{{DEPLOY}}})",
             description="kube-state-metrics: pods of the release's Deployments not ready."),
        series("Games started and finished by variant (per minute)", [
            q(f"60 * sum by (variant) (rate(frontier_game_session_games_started_total{{{GS}}}[{RATE}]))", "started {{variant}}"),
            q(f"60 * sum by (variant) (rate(frontier_game_session_games_finished_total{{{GS}}}[{RATE}]))", "finished {{variant}}"),
        ]),
        series("Moves/s by variant", [q(f"sum by (variant) (rate(frontier_game_session_moves_total{{{GS}}}[{RATE}]))", "{{variant}}")], "ops"),
        series("Move round trip p50 / p99 (gateway: message to ack)",
               quantiles("frontier_gateway_move_round_trip_seconds", GW, label="move"), "s",
               "From a move's message at the gateway to its ack queued for the socket: game-session's load, rules, "
               "compare-and-set and publish included; the network to the client is not."),
        series("game-session Act p50 / p99 (server side)",
               quantiles("frontier_grpc_server_duration_seconds", f'{GS}, method="Act"', label="Act"), "s",
               "game-session's own share of a move's round trip."),
        series("A move's stages p50 / p99: gateway",
               quantiles("frontier_gateway_stage_seconds", GW, by="stage"), "s",
               "session: the Act call to game-session as the gateway sees it; relay: from game-session's publish "
               "to the event's receipt at the gateway (NATS; the two hosts' clocks)."),
        series("A move's stages p50 / p99: game-session",
               quantiles("frontier_game_session_stage_seconds", GS, by="stage"), "s",
               "load: a game read from Redis (a cache miss); render: frames and record encoded; store: the "
               "compare-and-set; publish: events, bot jobs and finished records sent."),
        series("WebSocket error frames/s by code",
               [q(f"sum by (code) (rate(frontier_gateway_ws_errors_total{{{GW}}}[{RATE}]))", "{{code}}")], "ops"),
        series("Refusals/s by reason (abuse limits)",
               [q(f"sum by (reason) (rate(frontier_gateway_refusals_total{{{GW}}}[{RATE}]))", "{{reason}}")], "ops"),
        series("gRPC server errors/s by service and method", [
            q(f'sum by (job, method, code) (rate(frontier_grpc_server_requests_total{{{ALL}, code=~"2|4|12|13|14|15|transport"}}[{RATE}]))',
              "{{job}} {{method}} {{code}}")], "reqps"),
        series("Queues: finished games waiting for rating and fair play, bot jobs waiting", [
            q(f"max(frontier_rating_consumer_lag{{{RATING}}})", "rating consumer lag"),
            q(f"max(frontier_fairplay_backlog{{{FP}}})", "fair-play backlog"),
            q(f"max(frontier_bot_jobs_backlog{{{BOT}}})", "bot-job backlog"),
        ]),
        series("Fair play: games analysed, skipped, rejected (per minute); reports open", [
            q(f"60 * sum by (outcome) (rate(frontier_fairplay_games_total{{{FP}}}[{RATE}]))", "{{outcome}}"),
            q(f"max(frontier_fairplay_reports_open{{{FP}}})", "reports open"),
        ], description="Finished rated games screened after the game, off the live path; reports open: the moderation "
                       "queue's undecided reports."),
        series("Targets up by service", [q(f"sum by (job) (up{{{ALL}}})", "{{job}}")]),
    ]),
    "gateway": ("Frontier / Gateway", [
        up_panel("gateway"),
        series("WebSocket connections by pod", [q(f"sum by (pod) (frontier_gateway_ws_connections{{{GW}}})", "{{pod}}")]),
        series("Client messages/s by type", [q(f"sum by (type) (rate(frontier_gateway_ws_messages_total{{{GW}}}[{RATE}]))", "{{type}}")], "ops"),
        series("Relayed frames/s", [q(f"sum(rate(frontier_gateway_relayed_frames_total{{{GW}}}[{RATE}]))", "relayed")], "ops"),
        series("Error frames/s by code", [q(f"sum by (code) (rate(frontier_gateway_ws_errors_total{{{GW}}}[{RATE}]))", "{{code}}")], "ops"),
        series("Refusals/s by reason", [q(f"sum by (reason) (rate(frontier_gateway_refusals_total{{{GW}}}[{RATE}]))", "{{reason}}")], "ops"),
        series("Limit checks failed (Redis), let through", [
            q(f"sum by (limit) (rate(frontier_gateway_limit_errors_total{{{GW}}}[{RATE}]))", "{{limit}}")], "ops",
            "A limit whose Redis call failed lets the request through (and logs it)."),
    ]),
    "game-session": ("Frontier / Game session", [
        up_panel("game-session"),
        series("Moves/s by variant", [q(f"sum by (variant) (rate(frontier_game_session_moves_total{{{GS}}}[{RATE}]))", "{{variant}}")], "ops"),
        series("Games started, finished, boards created (per minute)", [
            q(f"60 * sum by (variant) (rate(frontier_game_session_games_started_total{{{GS}}}[{RATE}]))", "started {{variant}}"),
            q(f"60 * sum by (variant) (rate(frontier_game_session_games_finished_total{{{GS}}}[{RATE}]))", "finished {{variant}}"),
            q(f"60 * sum by (variant) (rate(frontier_game_session_boards_created_total{{{GS}}}[{RATE}]))", "boards {{variant}}"),
        ]),
        *grpc_panels(GS),
        series("Compare-and-set conflicts per move", [
            q(f"sum(rate(frontier_game_session_cas_conflicts_total{{{GS}}}[{RATE}])) / sum(rate(frontier_game_session_moves_total{{{GS}}}[{RATE}]))", "conflicts / move"),
        ], "percentunit"),
        series("State-cache rechecks/s", [q(f"sum(rate(frontier_game_session_state_cache_rechecks_total{{{GS}}}[{RATE}]))", "rechecks")], "ops"),
        series("Publish errors/s by kind (NATS)", [
            q(f"sum by (kind) (rate(frontier_game_session_publish_errors_total{{{GS}}}[{RATE}]))", "{{kind}}")], "ops",
            "finished and bot_job failures stay in their Redis outbox and are retried by the sweeper; event failures are filled from the log."),
        series("Outbox entries found by the sweep, failed sweeps (per minute)", [
            q(f"max by (outbox) (frontier_game_session_outbox_entries{{{GS}}})", "{{outbox}} entries"),
            q(f"60 * sum by (outbox) (rate(frontier_game_session_outbox_sweep_errors_total{{{GS}}}[{RATE}]))", "{{outbox}} failed sweeps"),
        ]),
        series("Bot jobs enqueued and dropped (per minute)", [
            q(f"60 * sum by (variant) (rate(frontier_game_session_bot_jobs_enqueued_total{{{GS}}}[{RATE}]))", "enqueued {{variant}}"),
            q(f"60 * sum by (reason) (rate(frontier_game_session_bot_jobs_dropped_total{{{GS}}}[{RATE}]))", "dropped {{reason}}"),
        ]),
        series("Rematches (per minute)", [
            q(f"60 * sum by (event) (rate(frontier_game_session_rematches_total{{{GS}}}[{RATE}]))", "{{event}}")]),
    ]),
    "matchmaking": ("Frontier / Matchmaking", [
        up_panel("matchmaking"),
        series("Tickets waiting by pool", [q(f"max by (pool) (frontier_matchmaking_tickets_waiting{{{MM}}})", "{{pool}}")]),
        series("Time to pair p50 / p99 by pool", quantiles("frontier_matchmaking_time_to_pair_seconds", MM, by="pool"), "s"),
        series("Bot fallbacks, cancellations (per minute)", [
            q(f"60 * sum by (pool) (rate(frontier_matchmaking_bot_fallbacks_total{{{MM}}}[{RATE}]))", "bot {{pool}}"),
            q(f"60 * sum by (reason) (rate(frontier_matchmaking_cancellations_total{{{MM}}}[{RATE}]))", "cancelled {{reason}}"),
        ]),
        series("Conflicts, restored pairings, rating look-up failures (per minute)", [
            q(f"60 * sum(rate(frontier_matchmaking_conflicts_total{{{MM}}}[{RATE}]))", "conflicts"),
            q(f"60 * sum(rate(frontier_matchmaking_restored_total{{{MM}}}[{RATE}]))", "restored"),
            q(f"60 * sum(rate(frontier_matchmaking_rating_lookup_failures_total{{{MM}}}[{RATE}]))", "rating look-up failures"),
        ]),
        *grpc_panels(MM),
    ]),
    "clock": ("Frontier / Clock", [
        up_panel("clock"),
        series("Flag lateness p50 / p99", quantiles("frontier_clock_firing_lag_seconds", CLOCK, label="lag"), "s",
               "How long after its deadline a flag fell (ExpireClock answered)."),
        series("Deadlines tracked", [q(f"max(frontier_clock_deadlines_tracked{{{CLOCK}}})", "tracked")]),
        series("Games ended by the clock, expiry errors (per minute)", [
            q(f"60 * sum(rate(frontier_clock_games_ended_total{{{CLOCK}}}[{RATE}]))", "ended"),
            q(f"60 * sum(rate(frontier_clock_expire_errors_total{{{CLOCK}}}[{RATE}]))", "ExpireClock failed"),
        ]),
    ]),
    "rating": ("Frontier / Rating", [
        up_panel("rating"),
        series("Consumer lag (finished games pending + unacknowledged)", [q(f"max(frontier_rating_consumer_lag{{{RATING}}})", "lag")]),
        series("Finished games recorded by outcome (per minute)", [
            q(f"60 * sum by (outcome) (rate(frontier_rating_games_total{{{RATING}}}[{RATE}]))", "{{outcome}}")]),
        series("Retries, set aside, rejected (per minute)", [
            q(f"60 * sum(rate(frontier_rating_retries_total{{{RATING}}}[{RATE}]))", "retries (Postgres)"),
            q(f"60 * sum(rate(frontier_rating_set_aside_total{{{RATING}}}[{RATE}]))", "set aside"),
            q(f"60 * sum by (reason) (rate(frontier_rating_rejected_total{{{RATING}}}[{RATE}]))", "rejected {{reason}}"),
        ]),
        *grpc_panels(RATING),
    ]),
    "fairplay": ("Frontier / Fair play", [
        up_panel("fairplay"),
        series("Backlog (finished games pending + unacknowledged on its consumer)", [
            q(f"max(frontier_fairplay_backlog{{{FP}}})", "backlog")],
            description="Read from NATS every 5 s by every instance (the same consumer): what KEDA scales on."),
        series("Instances: current and maximum (HPA)", [
            q(f'max(kube_horizontalpodautoscaler_status_current_replicas{{namespace="$namespace", horizontalpodautoscaler=~"(keda-hpa-)?$release-fairplay"}})', "current"),
            q(f'max(kube_horizontalpodautoscaler_spec_max_replicas{{namespace="$namespace", horizontalpodautoscaler=~"(keda-hpa-)?$release-fairplay"}})', "max"),
        ]),
        series("Games by variant and outcome (per minute)", [
            q(f"60 * sum by (variant, outcome) (rate(frontier_fairplay_games_total{{{FP}}}[{RATE}]))", "{{variant}} {{outcome}}")]),
        series("Analysis time p50 / p99 by variant", quantiles("frontier_fairplay_analysis_seconds", FP, by="variant"), "s",
               "One game's analysis (both players' moves at the node budget, fairplay.nodes)."),
        series("Reports: made by variant (per hour), open", [
            q(f"3600 * sum by (variant) (rate(frontier_fairplay_reports_total{{{FP}}}[{RATE}]))", "made {{variant}}"),
            q(f"max(frontier_fairplay_reports_open{{{FP}}})", "open"),
        ]),
        series("Retries, set aside, rejected (per minute)", [
            q(f"60 * sum(rate(frontier_fairplay_retries_total{{{FP}}}[{RATE}]))", "retries"),
            q(f"60 * sum(rate(frontier_fairplay_set_aside_total{{{FP}}}[{RATE}]))", "set aside"),
            q(f"60 * sum by (reason) (rate(frontier_fairplay_rejected_total{{{FP}}}[{RATE}]))", "rejected {{reason}}"),
        ]),
        *grpc_panels(FP),
    ]),
    "bot-worker": ("Frontier / Bot workers", [
        up_panel("bot-worker"),
        series("Backlog (jobs pending + unacknowledged) and jobs in progress", [
            q(f"max(frontier_bot_jobs_backlog{{{BOT}}})", "backlog"),
            q(f"sum(frontier_bot_jobs_in_progress{{{BOT}}})", "in progress"),
        ]),
        series("Workers: current and maximum (HPA)", [
            q(f'max(kube_horizontalpodautoscaler_status_current_replicas{{namespace="$namespace", horizontalpodautoscaler=~"(keda-hpa-)?$release-bot-worker"}})', "current"),
            q(f'max(kube_horizontalpodautoscaler_spec_max_replicas{{namespace="$namespace", horizontalpodautoscaler=~"(keda-hpa-)?$release-bot-worker"}})', "max"),
        ]),
        series("Jobs by outcome (per minute)", [
            q(f"60 * sum by (outcome) (rate(frontier_bot_jobs_total{{{BOT}}}[{RATE}]))", "{{outcome}}")]),
        series("Think time p50 / p99 by level", quantiles("frontier_bot_think_seconds", BOT, by="level"), "s"),
        series("Queue wait p50 / p99", quantiles("frontier_bot_job_queue_seconds", BOT, label="queued"), "s",
               "From the job's enqueueing to a worker taking it."),
        series("Failures, refusals, rejections, set aside (per minute)", [
            q(f"60 * sum by (kind) (rate(frontier_bot_jobs_failures_total{{{BOT}}}[{RATE}]))", "failed {{kind}}"),
            q(f"60 * sum by (reason) (rate(frontier_bot_jobs_refused_total{{{BOT}}}[{RATE}]))", "refused {{reason}}"),
            q(f"60 * sum by (reason) (rate(frontier_bot_jobs_rejected_total{{{BOT}}}[{RATE}]))", "rejected {{reason}}"),
            q(f"60 * sum(rate(frontier_bot_jobs_set_aside_total{{{BOT}}}[{RATE}]))", "set aside"),
        ]),
    ]),
}


def variables() -> dict:
    def textbox(name: str, label: str, default: str) -> dict:
        return {"name": name, "label": label, "type": "textbox", "query": default,
                "current": {"text": default, "value": default}, "hide": 0}

    return {"list": [
        {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
         "current": {}, "hide": 0, "refresh": 1},
        textbox("namespace", "Namespace", "__NAMESPACE__"),
        textbox("release", "Release (object-name prefix)", "__FULLNAME__"),
    ]}


def panel(spec: dict, pid: int, x: int, y: int, w: int, h: int) -> dict:
    out = {
        "id": pid,
        "type": spec["kind"],
        "title": spec["title"],
        "datasource": DS,
        "gridPos": {"h": h, "w": w, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": spec["unit"]}, "overrides": []},
        "targets": [
            {"datasource": DS, "expr": t["expr"], "legendFormat": t["legend"] or "__auto", "refId": chr(ord("A") + i)}
            for i, t in enumerate(spec["targets"])
        ],
    }
    if spec["description"]:
        out["description"] = spec["description"]
    if spec["kind"] == "stat":
        out["options"] = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False}, "colorMode": "value",
                          "graphMode": "area"}
    else:
        out["options"] = {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                          "tooltip": {"mode": "multi", "sort": "desc"}}
    return out


def dashboard(slug: str, title: str, specs: list[dict]) -> dict:
    panels, pid, x, y = [], 1, 0, 0
    stats = [s for s in specs if s["kind"] == "stat"]
    for s in stats:  # a row of stats, 6 wide each
        panels.append(panel(s, pid, x, y, 6, 4))
        pid, x = pid + 1, x + 6
        if x >= 24:
            x, y = 0, y + 4
    if x:
        x, y = 0, y + 4
    for s in (s for s in specs if s["kind"] != "stat"):  # two time series a row
        panels.append(panel(s, pid, x, y, 12, 8))
        pid, x = pid + 1, x + 12
        if x >= 24:
            x, y = 0, y + 8
    return {
        "uid": f"frontier-{slug}",
        "title": title,
        "tags": ["frontier"],
        "editable": True,
        "schemaVersion": 39,
        "version": 1,
        "refresh": "30s",
        "time": {"from": "now-3h", "to": "now"},
        "timezone": "",
        "graphTooltip": 1,
        "annotations": {"list": []},
        "links": [{"title": "Frontier", "type": "dashboards", "tags": ["frontier"], "asDropdown": True}],
        "templating": variables(),
        "panels": panels,
    }


def generate() -> dict[str, str]:
    """File name -> JSON text."""
    return {f"{slug}.json": json.dumps(dashboard(slug, title, specs), indent=2, ensure_ascii=False) + "\n"
            for slug, (title, specs) in BOARDS.items()}


def stale() -> list[str]:
    want = generate()
    have = {p.name: p.read_text() for p in OUT.glob("*.json")} if OUT.exists() else {}
    return sorted(set(want) ^ set(have)) + sorted(n for n in want if n in have and want[n] != have[n])


def main() -> int:
    if sys.argv[1:] == ["--check"]:
        differs = stale()
        if differs:
            print(f"dashboards: {OUT.relative_to(ROOT)} is not what deploy/check/dashboards.py generates "
                  f"(run it): {differs}", file=sys.stderr)
            return 1
        print("dashboards: up to date")
        return 0
    if sys.argv[1:]:
        print(__doc__, file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.json"):
        old.unlink()
    for name, text in generate().items():
        (OUT / name).write_text(text)
    print(f"dashboards: wrote {len(BOARDS)} dashboards under {OUT.relative_to(ROOT)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
