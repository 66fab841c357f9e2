#!/usr/bin/env python3
"""Offline checks of the deployment (no cluster, no Helm binary).

    deploy.py k8s     renders the chart into k8s/ (base + overlays), what `make k8s` runs
    deploy.py check   what `make deploy-check` runs: lint and render the chart with the
                      default values and the production-like ones, validate every object
                      against the Kubernetes API schemas (and the ScaledObject against
                      KEDA's model), assert what matters, check k8s/ is what the chart
                      renders, and check that bad values are refused by values.schema.json.

Helm's library comes from the `helm-python-sdk` wheel (libhelm_c, no helm binary); the
Kubernetes schemas from `kubernetes-validate`; KEDA's CRD model from
`cloudcoil-models-keda` (deploy/check/requirements.txt; `make deploy-check` installs them).

Also in `check`: NOTES.txt, the gateway's Ingress, the `helm test` hook, per-service image
tags, ServiceAccounts without tokens, the backup CronJob (its script run with a stand-in
pg_dump), values.yaml documented field by field with deploy/README.md's table equal to what
deploy/check/values_table.py generates, and maxReplicas ≥ minReplicas (refused at render).

The monitoring part of `check`: the chart's alerts (templates/prometheusrule.yaml) rendered
and run through `promtool check rules` and `promtool test rules` with
deploy/check/alerts-test.yaml (promtool from Debian's `prometheus` package: installed with
apt-get when missing and this runs as root, else the check fails); every alert's
runbook_url anchor found among docs/runbook.md's headings; the dashboards equal to what
deploy/check/dashboards.py generates; every metric name queried found in the sources
(deploy/check/metric_names.py --static).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "frontier"
VALUES = ROOT / "deploy" / "values"
BAD_VALUES = ROOT / "deploy" / "check" / "bad-values"
K8S = ROOT / "k8s"
NAMES_RS = ROOT / "libs" / "platform" / "src" / "names.rs"
RATING_RS = ROOT / "services" / "rating" / "src" / "lib.rs"
FAIRPLAY_SRC = ROOT / "services" / "fairplay" / "src"
ALERT_TESTS = ROOT / "deploy" / "check" / "alerts-test.yaml"
RUNBOOK = ROOT / "docs" / "runbook.md"

RELEASE = "frontier"
K8S_NAMESPACE = "frontier"
# The chart's kubeVersion floor, and the newest schemas kubernetes-validate ships.
KUBE_VERSIONS = ["1.30.0"]
SERVICES = ["gateway", "game-session", "clock", "rating", "bot-worker", "matchmaking", "fairplay"]
# The Secret's keys each service is given, as the variables its `frontier <service> --help`
# reads (services/*/src/config.rs, libs/platform/src/config.rs): exactly these, no more.
SERVICE_SECRETS = {
    "gateway": {"FRONTIER_JWT_SECRET", "FRONTIER_JWT_KEYS", "FRONTIER_DATABASE_URL", "FRONTIER_REDIS_URL", "FRONTIER_NATS_URL"},
    "game-session": {"FRONTIER_REDIS_URL", "FRONTIER_NATS_URL"},
    "clock": {"FRONTIER_REDIS_URL"},
    "rating": {"FRONTIER_DATABASE_URL", "FRONTIER_NATS_URL"},
    "bot-worker": {"FRONTIER_NATS_URL"},
    "matchmaking": {"FRONTIER_REDIS_URL", "FRONTIER_NATS_URL"},
    "fairplay": {"FRONTIER_DATABASE_URL", "FRONTIER_NATS_URL"},
}
# The services given the database URL (they own migrations: deploy/README.md).
DATABASE_USERS = ("gateway", "rating", "fairplay")
# The gRPC services other services call, by the ConfigMap variable that gives their URL
# and the one that gives their listen address.
GRPC_URLS = {
    "game-session": ("FRONTIER_GAME_SESSION_URLS", "FRONTIER_GAME_SESSION_LISTEN"),
    "rating": ("FRONTIER_RATING_URL", "FRONTIER_RATING_LISTEN"),
    "matchmaking": ("FRONTIER_MATCHMAKING_URL", "FRONTIER_MATCHMAKING_LISTEN"),
    "fairplay": ("FRONTIER_FAIRPLAY_URL", "FRONTIER_FAIRPLAY_LISTEN"),
}
DATA_SERVICES = ["redis", "nats", "postgres"]


# ---------------------------------------------------------------------------------------
# Rendering


def load_values(*names: str, extra: dict | None = None) -> dict:
    """The values files under deploy/values merged in order, then `extra`."""
    merged: dict = {}
    for name in names:
        with open(VALUES / name) as f:
            deep_merge(merged, yaml.safe_load(f) or {})
    if extra:
        deep_merge(merged, copy.deepcopy(extra))
    return merged


def deep_merge(into: dict, other: dict) -> dict:
    for key, value in other.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            deep_merge(into[key], value)
        else:
            into[key] = value
    return into


def render(values: dict, namespace: str = K8S_NAMESPACE) -> list[dict]:
    """Every object the chart renders with these values (schema-checked by Helm)."""
    import helm_python as helm

    with helm.Chart.load(str(CHART)) as chart:
        manifests = chart.render(values, name=RELEASE, namespace=namespace, is_install=True)
    objects = []
    for path in sorted(manifests):
        if path.endswith("/NOTES.txt"):  # text for the user, not an object (render_notes)
            continue
        for doc in yaml.load_all(manifests[path], Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            if doc:
                objects.append(doc)
    return objects


def render_notes(values: dict, namespace: str = K8S_NAMESPACE) -> str:
    """What `helm install` prints after installing (templates/NOTES.txt)."""
    import helm_python as helm

    with helm.Chart.load(str(CHART)) as chart:
        manifests = chart.render(values, name=RELEASE, namespace=namespace, is_install=True)
    return next((text for path, text in manifests.items() if path.endswith("/NOTES.txt")), "")


def is_hook(obj: dict) -> bool:
    """A Helm hook (the `helm test` Pod and its ServiceAccount): made by `helm test`, not by
    an install, so not part of k8s/."""
    return "helm.sh/hook" in (obj["metadata"].get("annotations") or {})


def render_k8s(values: dict) -> list[dict]:
    """The objects an install creates (no hooks): what k8s/ holds."""
    return [o for o in render(values) if not is_hook(o)]


def key(obj: dict) -> tuple[str, str]:
    return (obj["kind"], obj["metadata"]["name"])


# ---------------------------------------------------------------------------------------
# k8s/: base (objects both overlays share) + overlays/dev + overlays/prod


def k8s_tree() -> dict[str, str]:
    """The k8s/ tree the chart renders: relative path -> file text."""
    dev = {key(o): o for o in render_k8s(load_values("k8s-common.yaml", "k8s-dev.yaml"))}
    prod = {key(o): o for o in render_k8s(load_values("k8s-common.yaml", "k8s-prod.yaml"))}
    shared = sorted(k for k in dev if k in prod and dev[k] == prod[k])
    files: dict[str, str] = {}
    header = "# Rendered from deploy/helm/frontier by `make k8s`: do not edit (make deploy-check fails).\n"

    def object_file(folder: str, obj: dict) -> str:
        name = f"{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"
        files[f"{folder}/{name}"] = header + yaml.safe_dump(obj, sort_keys=True)
        return name

    def kustomization(folder: str, resources: list[str], comment: str) -> None:
        body = {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "namespace": K8S_NAMESPACE,
            "resources": resources,
        }
        files[f"{folder}/kustomization.yaml"] = header + comment + yaml.safe_dump(body, sort_keys=False)

    kustomization(
        "base",
        [object_file("base", dev[k]) for k in shared],
        "# The objects every overlay shares (the services). Apply an overlay, not this.\n",
    )
    for name, objects, comment in [
        ("dev", dev, "# A trial cluster: single-node Redis, NATS and Postgres in the namespace.\n"),
        ("prod", prod, "# External Redis, NATS and Postgres; create the Secret `frontier` first.\n"),
    ]:
        own = [object_file(f"overlays/{name}", objects[k]) for k in sorted(objects) if k not in shared]
        kustomization(f"overlays/{name}", ["../../base"] + own, comment)
    return files


def write_k8s() -> None:
    files = k8s_tree()
    if K8S.exists():
        shutil.rmtree(K8S)
    for rel, text in files.items():
        path = K8S / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    print(f"k8s: wrote {len(files)} files under {K8S.relative_to(ROOT)}/")


# ---------------------------------------------------------------------------------------
# Checks


class Checks:
    def __init__(self) -> None:
        self.passed = 0
        self.failures: list[str] = []

    def check(self, ok: bool, what: str) -> bool:
        if ok:
            self.passed += 1
        else:
            self.failures.append(what)
            print(f"  FAIL {what}", file=sys.stderr)
        return ok


def platform_names() -> tuple[str, str]:
    """From libs/platform/src/names.rs: the bot-workers consumer and the stream's suffix."""
    text = NAMES_RS.read_text()
    consumer = re.search(r'pub const BOT_WORKERS_CONSUMER: &str = "([^"]+)";', text)
    stream = re.search(r'fn bot_jobs_stream\(&self\) -> String \{\s*format!\(\s*"\{\}(_[A-Z_]+)"', text)
    if not consumer or not stream:
        sys.exit("deploy-check: cannot find BOT_WORKERS_CONSUMER or bot_jobs_stream in names.rs")
    return consumer.group(1), stream.group(1)


def finished_games_suffix() -> str:
    """From names.rs: the suffix of Namespace::finished_games_stream (`_GAMES`)."""
    m = re.search(r'fn finished_games_stream\(&self\) -> String \{\s*format!\(\s*"\{\}(_[A-Z_]+)"', NAMES_RS.read_text())
    if not m:
        sys.exit("deploy-check: cannot find finished_games_stream in names.rs")
    return m.group(1)


def rating_consumer() -> str:
    """rating's durable consumer on the finished-games stream (its --consumer default)."""
    m = re.search(r'env = "FRONTIER_RATING_CONSUMER", default_value = "([^"]+)"', RATING_RS.read_text())
    if not m:
        sys.exit("deploy-check: cannot find FRONTIER_RATING_CONSUMER's default in services/rating/src/lib.rs")
    return m.group(1)


def fairplay_consumer_default() -> str | None:
    """fairplay's --consumer default (FRONTIER_FAIRPLAY_CONSUMER) in its sources, or None
    while services/fairplay does not exist (the chart's default is then taken on trust)."""
    for path in sorted(FAIRPLAY_SRC.rglob("*.rs")) if FAIRPLAY_SRC.exists() else []:
        m = re.search(r'env = "FRONTIER_FAIRPLAY_CONSUMER",\s*default_value = "([^"]+)"', path.read_text())
        if m:
            return m.group(1)
    return None


def stream_for(namespace: str, suffix: str) -> str:
    """Namespace::bot_jobs_stream: the prefix upper-cased, `-` as `_`, then the suffix."""
    return namespace.upper().replace("-", "_") + suffix


def seconds(duration: str) -> float:
    m = re.fullmatch(r"(\d+)(ms|s|m|h)?", duration)
    if not m:
        raise ValueError(duration)
    n, unit = int(m.group(1)), m.group(2) or "s"
    return n * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]


_validated: set[str] = set()


def validate_schemas(c: Checks, label: str, objects: list[dict]) -> None:
    import kubernetes_validate
    import kubernetes_validate.utils as kv_utils
    from cloudcoil.models.keda.v1alpha1 import ScaledObject

    # kubernetes-validate reads its (large) schema files anew for every object: read once.
    if not hasattr(kv_utils.schema_contents, "cache_info"):
        kv_utils.schema_contents = functools.lru_cache(maxsize=None)(kv_utils.schema_contents)
    for obj in objects:
        what = f"{label}: {obj['kind']}/{obj['metadata']['name']}"
        seen = json.dumps(obj, sort_keys=True)
        if seen in _validated:  # the same object in another variant
            continue
        _validated.add(seen)
        if obj["kind"] == "ScaledObject":
            try:
                model = ScaledObject.model_validate(obj)
                # The model ignores unknown fields: a misspelt one must not pass unseen.
                back = model.model_dump(by_alias=True, exclude_unset=True, mode="json")
                c.check(back == obj, f"{what}: fields KEDA's model does not know: {diff(obj, back)}")
            except Exception as e:  # pydantic's ValidationError
                c.check(False, f"{what}: KEDA model: {e}")
            continue
        if obj["kind"] == "PrometheusRule":
            # No schema package for the operator's CRDs either: its required shape.
            groups = obj.get("spec", {}).get("groups", [])
            c.check(obj["apiVersion"] == "monitoring.coreos.com/v1" and groups
                    and all(g.get("name") and g.get("rules") for g in groups)
                    and all(set(r) <= {"alert", "expr", "for", "labels", "annotations"} and r.get("alert") and r.get("expr")
                            for g in groups for r in g["rules"]),
                    f"{what}: named groups of alerts with known fields")
            continue
        if obj["kind"] == "ServiceMonitor":
            # No schema package at hand for the Prometheus operator: its required shape.
            spec = obj.get("spec", {})
            c.check(obj["apiVersion"] == "monitoring.coreos.com/v1"
                    and spec.get("selector", {}).get("matchLabels")
                    and all(e.get("port") for e in spec.get("endpoints", [])),
                    f"{what}: selector and endpoint ports")
            continue
        for version in KUBE_VERSIONS + [kubernetes_validate.latest_version()]:
            try:
                kubernetes_validate.validate(obj, version, strict=True)
                c.check(True, what)
            except Exception as e:
                c.check(False, f"{what} against Kubernetes {version}: {getattr(e, 'message', e)}")


def diff(a, b, path="") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            if k not in b:
                return f"{path}.{k}"
            d = diff(a[k], b[k], f"{path}.{k}")
            if d:
                return d
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            d = diff(x, y, f"{path}[{i}]")
            if d:
                return d
    elif a != b:
        return f"{path}: {a!r} != {b!r}"
    return ""


def pod_specs(objects: list[dict], every: bool = False):
    """The pod specs of long-running workloads (Deployments, StatefulSets); with `every`,
    also those of the CronJob's jobs and of bare Pods (the `helm test` hook)."""
    for obj in objects:
        if obj["kind"] in ("Deployment", "StatefulSet"):
            yield obj, obj["spec"]["template"]["spec"]
        elif every and obj["kind"] == "CronJob":
            yield obj, obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        elif every and obj["kind"] == "Pod":
            yield obj, obj["spec"]


def assert_invariants(c: Checks, label: str, values: dict, objects: list[dict]) -> None:
    import helm_python as helm

    with helm.Chart.load(str(CHART)) as chart:
        merged = chart.merge_values(values)
    by_key = {key(o): o for o in objects}
    component = lambda o: o["metadata"].get("labels", {}).get("app.kubernetes.io/component")
    config = next(o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == RELEASE)["data"]
    drain = seconds(config["FRONTIER_DRAIN_TIMEOUT"])

    # Every pod: its own ServiceAccount (named for its component, used by no other
    # workload), and no token, neither from the pod nor from the ServiceAccount: no
    # Frontier pod calls the Kubernetes API.
    accounts = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ServiceAccount"}
    used: dict[str, str] = {}
    for obj, spec in pod_specs(objects, every=True):
        name = f"{label}: {obj['kind']}/{obj['metadata']['name']}"
        c.check(spec.get("automountServiceAccountToken") is False, f"{name}: no service-account token")
        sa = spec.get("serviceAccountName", "default")
        c.check(sa in accounts and accounts[sa].get("automountServiceAccountToken") is False,
                f"{name}: runs as its own ServiceAccount {sa!r}, rendered, with automountServiceAccountToken false")
        c.check(sa == f"{RELEASE}-{component(obj)}" and sa not in used,
                f"{name}: ServiceAccount {sa!r} is its component's alone (also used by {used.get(sa)})")
        used[sa] = obj["metadata"]["name"]
    c.check(sorted(used) == sorted(accounts), f"{label}: every ServiceAccount is used by one workload "
            f"({sorted(set(accounts) - set(used))} unused)")

    # Every container: non-root, read-only root, no privilege escalation, limits; probes
    # for the long-running ones.
    for obj, spec in pod_specs(objects, every=True):
        name = f"{label}: {obj['kind']}/{obj['metadata']['name']}"
        pod_sc = spec.get("securityContext", {})
        long_running = obj["kind"] in ("Deployment", "StatefulSet")
        for ctr in spec.get("initContainers", []) + spec["containers"]:
            cname = f"{name} container {ctr['name']}"
            sc = ctr.get("securityContext", {})
            non_root = sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) is True
            uid = sc.get("runAsUser", pod_sc.get("runAsUser"))
            c.check(non_root and uid not in (None, 0), f"{cname}: runs as a non-root user")
            c.check(sc.get("readOnlyRootFilesystem") is True, f"{cname}: read-only root filesystem")
            c.check(sc.get("allowPrivilegeEscalation") is False, f"{cname}: no privilege escalation")
            c.check(sc.get("capabilities", {}).get("drop") == ["ALL"], f"{cname}: drops every capability")
            if long_running:
                c.check("livenessProbe" in ctr and "readinessProbe" in ctr, f"{cname}: liveness and readiness probes")
            res = ctr.get("resources", {})
            c.check(all(res.get(k, {}).get(r) for k in ("requests", "limits") for r in ("cpu", "memory")),
                    f"{cname}: cpu and memory requests and limits")
        if component(obj) in SERVICES and long_running:
            ctr = spec["containers"][0]
            c.check(ctr["args"] == [component(obj)], f"{name}: runs `frontier {component(obj)}`")
            probe = lambda p: ctr.get(p, {}).get("httpGet", {}).get("path")
            c.check(probe("readinessProbe") == "/readyz" and probe("livenessProbe") == "/healthz",
                    f"{name}: probes /readyz and /healthz")
            pre = ctr.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds", 0)
            c.check(pre > 0, f"{name}: a preStop sleep before the drain")
            c.check(spec["terminationGracePeriodSeconds"] >= pre + drain + 5,
                    f"{name}: terminationGracePeriodSeconds {spec['terminationGracePeriodSeconds']} covers "
                    f"preStop {pre}s + drain {drain}s + 5s")
            live = ctr.get("livenessProbe", {})
            c.check(live.get("periodSeconds", 10) * live.get("failureThreshold", 3) > drain,
                    f"{name}: liveness cannot fail the pod during the drain ({drain}s)")
            env = {e["name"] for e in ctr.get("env", [])}
            c.check(("FRONTIER_JWT_SECRET" in env) == (component(obj) == "gateway"),
                    f"{name}: the JWT secret goes to the gateway alone")
            c.check(("FRONTIER_JWT_KEYS" in env) == (component(obj) == "gateway"),
                    f"{name}: the JWT keys go to the gateway alone")
            c.check(("FRONTIER_DATABASE_URL" in env) == (component(obj) in DATABASE_USERS),
                    f"{name}: the database URL goes to {', '.join(DATABASE_USERS)} alone")
            from_secret = {e["name"] for e in ctr.get("env", []) if "secretKeyRef" in e.get("valueFrom", {})}
            want = SERVICE_SECRETS[component(obj)]
            c.check(from_secret == want, f"{name}: given the secrets {sorted(from_secret)}, "
                    f"exactly what it reads ({sorted(want)})")

    # Which services exist, each with a PodDisruptionBudget.
    expected = ["gateway", "game-session", "clock", "rating"]
    expected += ["bot-worker"] if merged["botWorker"]["enabled"] else []
    expected += ["matchmaking"] if merged["matchmaking"]["enabled"] else []
    expected += ["fairplay"] if merged["fairplay"]["enabled"] else []
    deployments = sorted(component(o) for o in objects if o["kind"] == "Deployment")
    c.check(deployments == sorted(expected), f"{label}: Deployments {deployments} are {sorted(expected)}")
    pdbs = {component(o) for o in objects if o["kind"] == "PodDisruptionBudget"}
    c.check(set(expected) <= pdbs, f"{label}: a PodDisruptionBudget for every service")

    # Each gRPC service a running service calls: its URL in the ConfigMap names its Service
    # and port, which leads to the port it listens on; none for a service switched off.
    services = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Service"}
    for comp, (url_var, listen_var) in GRPC_URLS.items():
        if comp not in expected:
            c.check(url_var not in config, f"{label}: no {url_var} while {comp} is off")
            continue
        m = re.fullmatch(r"http://([a-z0-9.-]+):(\d+)", config.get(url_var, ""))
        svc = services.get(m.group(1)) if m else None
        port = next((p for p in svc["spec"]["ports"] if p["port"] == int(m.group(2))), None) if svc else None
        dep = by_key.get(("Deployment", f"{RELEASE}-{comp}"))
        ctr_ports = {p["name"]: p["containerPort"] for p in dep["spec"]["template"]["spec"]["containers"][0]["ports"]} if dep else {}
        listen = config.get(listen_var, "")
        c.check(port is not None and svc["spec"]["selector"].get("app.kubernetes.io/component") == comp
                and port.get("appProtocol") == "grpc" and ctr_ports.get(port["targetPort"]) == int(listen.rpartition(":")[2] or 0),
                f"{label}: {url_var}={config.get(url_var)!r} reaches {comp}'s gRPC port ({listen_var}={listen!r})")

    # HPAs on CPU for gateway, game-session, matchmaking (as configured).
    hpas = {o["spec"]["scaleTargetRef"]["name"]: o for o in objects if o["kind"] == "HorizontalPodAutoscaler"}
    for comp, vals in [("gateway", "gateway"), ("game-session", "gameSession"), ("matchmaking", "matchmaking")]:
        if comp in expected and merged[vals]["autoscaling"]["enabled"]:
            hpa = hpas.get(f"{RELEASE}-{comp}")
            c.check(hpa is not None and hpa["spec"]["metrics"][0]["resource"]["name"] == "cpu",
                    f"{label}: a CPU HPA for {comp}")
            dep = by_key.get(("Deployment", f"{RELEASE}-{comp}"))
            c.check(dep is not None and "replicas" not in dep["spec"], f"{label}: {comp}'s replica count is left to its HPA")

    # Bot-workers: a KEDA ScaledObject on the real stream and consumer, or an HPA without KEDA.
    scaled_objects = {o["spec"]["scaleTargetRef"]["name"]: o for o in objects if o["kind"] == "ScaledObject"}
    want_scaled = sorted(f"{RELEASE}-{comp}" for comp in ("bot-worker", "fairplay") if comp in expected) \
        if merged["keda"]["enabled"] else []
    c.check(sorted(scaled_objects) == want_scaled and all(o["metadata"]["name"] == n for n, o in scaled_objects.items()),
            f"{label}: ScaledObjects for {want_scaled} (rendered: {sorted(scaled_objects)})")
    if merged["botWorker"]["enabled"]:
        scaled = [scaled_objects[n] for n in scaled_objects if n == f"{RELEASE}-bot-worker"]
        if merged["keda"]["enabled"]:
            consumer, suffix = platform_names()
            stream = stream_for(config["FRONTIER_NAMESPACE"], suffix)
            ok = c.check(len(scaled) == 1, f"{label}: one ScaledObject for bot-worker")
            if ok:
                so = scaled[0]["spec"]
                trig = so["triggers"]
                c.check(so["scaleTargetRef"]["name"] == f"{RELEASE}-bot-worker", f"{label}: the ScaledObject scales bot-worker")
                c.check(len(trig) == 1 and trig[0]["type"] == "nats-jetstream", f"{label}: a nats-jetstream trigger")
                meta = trig[0]["metadata"]
                c.check(meta["stream"] == stream, f"{label}: ScaledObject stream {meta['stream']!r} is {stream!r} "
                        f"(FRONTIER_NAMESPACE {config['FRONTIER_NAMESPACE']!r}, names.rs)")
                c.check(meta["consumer"] == consumer, f"{label}: ScaledObject consumer {meta['consumer']!r} is "
                        f"{consumer!r} (names.rs BOT_WORKERS_CONSUMER)")
                c.check(re.fullmatch(r"[^/:\s]+:\d+", meta["natsServerMonitoringEndpoint"]) is not None,
                        f"{label}: the NATS monitoring endpoint is host:port")
                s = merged["botWorker"]["scaling"]
                c.check((so["minReplicaCount"], so["maxReplicaCount"], meta["lagThreshold"], meta["activationLagThreshold"])
                        == (s["minReplicas"], s["maxReplicas"], str(s["lagThreshold"]), str(s["activationLagThreshold"])),
                        f"{label}: replicas and thresholds from values")
                dep = by_key[("Deployment", f"{RELEASE}-bot-worker")]
                c.check("replicas" not in dep["spec"], f"{label}: bot-worker's replica count is left to KEDA")
                c.check(f"{RELEASE}-bot-worker" not in hpas, f"{label}: no second autoscaler on bot-worker")
        else:
            c.check(not scaled and f"{RELEASE}-bot-worker" in hpas, f"{label}: without KEDA an HPA scales bot-worker")

    # game-session writes the storage format of values; no other service is given it.
    gs_fmt = str(merged["gameSession"]["storageFormat"])
    for (kind, name), obj in by_key.items():
        if kind != "Deployment":
            continue
        ctr = obj["spec"]["template"]["spec"]["containers"][0]
        env = {e["name"]: e.get("value") for e in ctr.get("env", []) if "value" in e}
        want = gs_fmt if name == f"{RELEASE}-game-session" else None
        c.check(env.get("FRONTIER_STORAGE_FORMAT") == want,
                f"{label}: {name} is given FRONTIER_STORAGE_FORMAT={want} ({env.get('FRONTIER_STORAGE_FORMAT')})")
        # And where game events carry their metadata (read by gateways in both forms).
        want = merged["gameSession"]["eventMetadata"] if name == f"{RELEASE}-game-session" else None
        c.check(env.get("FRONTIER_EVENT_METADATA") == want,
                f"{label}: {name} is given FRONTIER_EVENT_METADATA={want} ({env.get('FRONTIER_EVENT_METADATA')})")

    # Fair play: a KEDA ScaledObject on its consumer of the finished-games stream — the very
    # consumer its pods are given, not rating's — or an HPA on CPU without KEDA.
    if "fairplay" in expected:
        fp = merged["fairplay"]
        dep = by_key[("Deployment", f"{RELEASE}-fairplay")]
        ctr = dep["spec"]["template"]["spec"]["containers"][0]
        env = {e["name"]: e.get("value") for e in ctr.get("env", []) if "value" in e}
        c.check(env.get("FRONTIER_FAIRPLAY_CONSUMER") == fp["consumer"] and env.get("FRONTIER_FAIRPLAY_NODES") == str(fp["nodes"])
                and env.get("FRONTIER_FAIRPLAY_CONCURRENCY") == (str(fp["concurrency"]) if fp["concurrency"] else None),
                f"{label}: fairplay is given its consumer, node budget and concurrency from values ({env})")
        c.check(fp["consumer"] != rating_consumer(), f"{label}: fairplay's consumer {fp['consumer']!r} is not rating's")
        default = fairplay_consumer_default()
        if default is not None and not values.get("fairplay", {}).get("consumer"):
            c.check(fp["consumer"] == default, f"{label}: fairplay.consumer's default {fp['consumer']!r} is the service's "
                    f"own default {default!r} (services/fairplay)")
        c.check("replicas" not in dep["spec"], f"{label}: fairplay's replica count is left to its autoscaler")
        if merged["keda"]["enabled"]:
            so = scaled_objects.get(f"{RELEASE}-fairplay")
            if c.check(so is not None, f"{label}: a ScaledObject for fairplay"):
                spec = so["spec"]
                trig = spec["triggers"]
                c.check(len(trig) == 1 and trig[0]["type"] == "nats-jetstream", f"{label}: fairplay: a nats-jetstream trigger")
                meta = trig[0]["metadata"]
                stream = stream_for(config["FRONTIER_NAMESPACE"], finished_games_suffix())
                c.check(meta["stream"] == stream, f"{label}: fairplay's ScaledObject stream {meta['stream']!r} is {stream!r} "
                        f"(FRONTIER_NAMESPACE {config['FRONTIER_NAMESPACE']!r}, names.rs finished_games_stream)")
                c.check(meta["consumer"] == env.get("FRONTIER_FAIRPLAY_CONSUMER") and meta["consumer"] != rating_consumer(),
                        f"{label}: fairplay's ScaledObject consumer {meta['consumer']!r} is the one its pods use "
                        f"({env.get('FRONTIER_FAIRPLAY_CONSUMER')!r}), not rating's")
                c.check(re.fullmatch(r"[^/:\s]+:\d+", meta["natsServerMonitoringEndpoint"]) is not None
                        and meta["account"] == merged["nats"]["account"],
                        f"{label}: fairplay: the NATS monitoring endpoint is host:port, the account nats.account")
                s = fp["scaling"]
                c.check(spec["minReplicaCount"] >= 1, f"{label}: fairplay keeps a pod for its read API (minReplicaCount ≥ 1)")
                c.check((spec["minReplicaCount"], spec["maxReplicaCount"], meta["lagThreshold"], meta["activationLagThreshold"])
                        == (s["minReplicas"], s["maxReplicas"], str(s["lagThreshold"]), str(s["activationLagThreshold"])),
                        f"{label}: fairplay's replicas and thresholds from values")
                c.check(f"{RELEASE}-fairplay" not in hpas, f"{label}: no second autoscaler on fairplay")
        else:
            hpa = hpas.get(f"{RELEASE}-fairplay")
            c.check(hpa is not None and hpa["spec"]["metrics"][0]["resource"]["name"] == "cpu" and hpa["spec"]["minReplicas"] >= 1,
                    f"{label}: without KEDA a CPU HPA scales fairplay")

    # The gateway's Ingress, when asked for: every path to the gateway Service's HTTP port,
    # with ingress-nginx's timeouts long enough for WebSockets unless the values say otherwise.
    ingresses = [o for o in objects if o["kind"] == "Ingress"]
    ing_values = merged["gateway"]["ingress"]
    if not ing_values["enabled"]:
        c.check(not ingresses, f"{label}: no Ingress unless gateway.ingress.enabled")
    elif c.check(len(ingresses) == 1, f"{label}: one Ingress, the gateway's"):
        ing = ingresses[0]
        gw_svc = services.get(f"{RELEASE}-gateway")
        rules = ing["spec"]["rules"]
        backends = [(p["path"], p["pathType"], p["backend"]["service"]["name"], p["backend"]["service"]["port"].get("name"))
                    for r in rules for p in r["http"]["paths"]]
        c.check(backends == [("/", "Prefix", f"{RELEASE}-gateway", "http")]
                and gw_svc is not None and "http" in {p["name"] for p in gw_svc["spec"]["ports"]},
                f"{label}: the Ingress sends every path (/, /api, /ws/v1) to the gateway Service's http port ({backends})")
        c.check([r.get("host", "") for r in rules] == [ing_values["host"]], f"{label}: the Ingress serves gateway.ingress.host")
        tls = ing["spec"].get("tls", [])
        c.check(bool(tls) == ing_values["tls"]["enabled"] and all(t["hosts"] == [ing_values["host"]] and t["secretName"] for t in tls),
                f"{label}: TLS for the host, with a certificate Secret, exactly when gateway.ingress.tls.enabled")
        notes = ing["metadata"].get("annotations", {})
        for k in ("nginx.ingress.kubernetes.io/proxy-read-timeout", "nginx.ingress.kubernetes.io/proxy-send-timeout"):
            if (ing_values["annotations"] or {}).get(k) is not None:
                c.check(int(notes.get(k, 0)) >= 3600, f"{label}: {k} keeps WebSockets open an hour ({notes.get(k)})")

    # `helm test`: one hook Pod playing `frontier smoke` against the gateway's Service port,
    # never restarted, as its own token-less ServiceAccount (made first); nothing else is a hook.
    tests = [o for o in objects if o["kind"] == "Pod"]
    hooks = sorted(key(o) for o in objects if is_hook(o))
    if not merged["smokeTest"]["enabled"]:
        c.check(not tests and not hooks, f"{label}: no test Pod when smokeTest.enabled is false")
    elif c.check(len(tests) == 1, f"{label}: one `helm test` Pod"):
        pod = tests[0]
        notes = pod["metadata"].get("annotations", {})
        c.check(notes.get("helm.sh/hook") == "test", f"{label}: the test Pod is a `helm test` hook")
        c.check(hooks == sorted([key(pod), ("ServiceAccount", f"{RELEASE}-test")]),
                f"{label}: the hooks are the test Pod and its ServiceAccount alone ({hooks})")
        sa = by_key.get(("ServiceAccount", f"{RELEASE}-test"), {})
        c.check(int(sa.get("metadata", {}).get("annotations", {}).get("helm.sh/hook-weight", 0))
                < int(notes.get("helm.sh/hook-weight", 0)), f"{label}: the test ServiceAccount is made before its Pod")
        spec = pod["spec"]
        c.check(spec.get("restartPolicy") == "Never" and spec.get("activeDeadlineSeconds", 0) > 0,
                f"{label}: the test Pod is never restarted and has a deadline")
        args = spec["containers"][0]["args"]
        m = re.fullmatch(r"http://([a-z0-9.-]+):(\d+)", args[2]) if len(args) == 5 else None
        svc = services.get(m.group(1)) if m else None
        port = next((p for p in svc["spec"]["ports"] if p["port"] == int(m.group(2))), None) if svc else None
        c.check(args[:2] == ["smoke", "--gateway"] and args[3] == "--timeout" and re.fullmatch(r"\d+(ms|s|m)", args[4])
                and port is not None and port["targetPort"] == "http" and component(svc) == "gateway",
                f"{label}: the test Pod runs `frontier smoke --gateway <the gateway Service's http port> --timeout …` ({args})")
        if merged["networkPolicy"]["enabled"] and merged["networkPolicy"]["gatewayFrom"]:
            gw_policy = by_key.get(("NetworkPolicy", f"{RELEASE}-gateway"))
            labels = pod["metadata"]["labels"]
            peers = [p for r in gw_policy["spec"]["ingress"] for p in r.get("from", [])] if gw_policy else []
            admitted = any(set(p) == {"podSelector"} and p["podSelector"].get("matchLabels")
                           and p["podSelector"]["matchLabels"].items() <= labels.items() for p in peers)
            c.check(admitted, f"{label}: the gateway's NetworkPolicy (gatewayFrom set) lets the test Pod in")

    # The backup CronJob, when asked for: pg_dump of the database the services use (the
    # same Secret key) into the volume named, one run at a time.
    cronjobs = [o for o in objects if o["kind"] == "CronJob"]
    b = merged["backup"]
    if not b["enabled"]:
        c.check(not cronjobs, f"{label}: no backup CronJob unless backup.enabled")
    elif c.check(len(cronjobs) == 1, f"{label}: one backup CronJob"):
        cj = cronjobs[0]
        spec = cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        ctr = spec["containers"][0]
        env = {e["name"]: e for e in ctr.get("env", [])}
        gw = by_key[("Deployment", f"{RELEASE}-gateway")]["spec"]["template"]["spec"]["containers"][0]
        gw_db = next(e["valueFrom"]["secretKeyRef"] for e in gw["env"] if e["name"] == "FRONTIER_DATABASE_URL")
        c.check(env.get("DATABASE_URL", {}).get("valueFrom", {}).get("secretKeyRef") == gw_db,
                f"{label}: the backup reads the database URL from the Secret key the gateway and rating use ({gw_db})")
        c.check(cj["spec"]["schedule"] == b["schedule"] and cj["spec"]["concurrencyPolicy"] == "Forbid"
                and spec["restartPolicy"] == "Never", f"{label}: the backup runs on its schedule, one at a time")
        claims = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in spec["volumes"] if "persistentVolumeClaim" in v}
        mounts = {m["name"]: m["mountPath"] for m in ctr["volumeMounts"]}
        target = next((n for n, claim in claims.items() if claim == b["existingClaim"]), None)
        c.check(target is not None and mounts.get(target) == env.get("BACKUP_DIR", {}).get("value"),
                f"{label}: the dumps go to backup.existingClaim ({claims}, mounted {mounts})")
        c.check(ctr["image"] == b["image"] and env.get("BACKUP_KEEP", {}).get("value") == str(b["keep"])
                and "pg_dump --format=custom" in ctr["args"][0],
                f"{label}: backup.image runs pg_dump --format=custom, keeping backup.keep dumps")

    # Only the gateway is exposed; NetworkPolicies restrict everything else.
    for o in objects:
        if o["kind"] == "Service" and component(o) != "gateway":
            c.check(o["spec"].get("type", "ClusterIP") == "ClusterIP", f"{label}: Service {o['metadata']['name']} is internal")
    if merged["networkPolicy"]["enabled"]:
        policies = {o["metadata"]["name"]: o for o in objects if o["kind"] == "NetworkPolicy"}
        deny = policies.get(f"{RELEASE}-default-deny")
        c.check(deny is not None and deny["spec"]["podSelector"]["matchLabels"].get("app.kubernetes.io/instance") == RELEASE
                and "ingress" not in deny["spec"], f"{label}: a default-deny ingress policy over the release")
        bot = ["bot-worker"] if merged["botWorker"]["enabled"] else []
        mm = ["matchmaking"] if merged["matchmaking"]["enabled"] else []
        fp = ["fairplay"] if merged["fairplay"]["enabled"] else []
        callers = {"game-session": ["gateway", "clock"] + bot + mm, "rating": ["gateway"] + mm}
        if mm:
            callers["matchmaking"] = ["gateway"]
        if fp:
            callers["fairplay"] = ["gateway"]
        if merged["dev"]["enabled"]:
            callers |= {"redis": ["gateway", "game-session", "clock"] + mm,
                        "nats": ["gateway", "game-session", "rating"] + bot + mm + fp,
                        "postgres": ["gateway", "rating"] + fp + (["backup"] if merged["backup"]["enabled"] else [])}
        for target, who in callers.items():
            p = policies.get(f"{RELEASE}-{target}")
            if not c.check(p is not None, f"{label}: a NetworkPolicy for {target}"):
                continue
            rules = p["spec"]["ingress"]
            allowed = sorted(v for r in rules for peer in r.get("from", [])
                             for e in peer.get("podSelector", {}).get("matchExpressions", []) for v in e["values"])
            c.check(allowed == sorted(who) and all(r.get("from") for r in rules),
                    f"{label}: {target} reachable only from {sorted(who)} (policy allows {allowed})")
            dep = by_key.get(("Deployment", f"{RELEASE}-{target}"))
            if dep is not None:  # a service: the policy opens the port it listens on
                named = {p["name"]: p["containerPort"] for p in dep["spec"]["template"]["spec"]["containers"][0]["ports"]}
                opened = sorted(p["port"] for r in rules for p in r.get("ports", []))
                c.check(opened == [named.get("grpc")], f"{label}: the {target} policy opens its gRPC port "
                        f"{named.get('grpc')} (opens {opened})")
        gw = policies.get(f"{RELEASE}-gateway")
        c.check(gw is not None and [p["port"] for r in gw["spec"]["ingress"] for p in r["ports"]] == [merged["gateway"]["port"]],
                f"{label}: the gateway policy opens its port alone")


def check_values_docs(c: Checks) -> None:
    """Every field of values.yaml has its description, the schema knows no field values.yaml
    leaves out, and deploy/README.md's values table is what values_table.py generates."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import values_table

    text, schema = values_table.load()
    bare = values_table.undocumented(text, schema)
    c.check(not bare, f"every field of values.yaml has a `# -- ` description above it: {bare}")
    gone = values_table.missing_from_values(text, schema)
    c.check(not gone, f"every field values.schema.json knows is in values.yaml: {gone}")
    generated = values_table.table(text, schema)
    readme = values_table.README.read_text()
    c.check(values_table.readme_table(readme) == generated,
            "deploy/README.md's values table is what deploy/check/values_table.py generates (run it with --write)")
    rows = values_table.rows(text, schema)
    c.check(len(rows) > 100 and all(kind and description for _, kind, _, description in rows),
            f"the values table has a type and a description on every row ({len(rows)} rows)")
    # …and each of those can fail.
    stripped = text.replace("  # -- JSON logs (FRONTIER_LOG_JSON=1).\n", "", 1)
    c.check(stripped != text and any(b.startswith("platform.logJson") for b in values_table.undocumented(stripped, schema)),
            "the description check catches a field without one")
    c.check(values_table.readme_table(values_table.with_table(readme, generated.replace("`20`", "`21`", 1))) != generated,
            "the table check catches a stale table")
    extra = json.loads(json.dumps(schema))
    extra["properties"]["platform"]["properties"]["shiny"] = {"type": "string"}
    c.check(values_table.missing_from_values(text, extra) == ["platform.shiny"],
            "the completeness check catches a schema field values.yaml leaves out")
    for where in (("gateway", "autoscaling"), ("gameSession", "autoscaling"), ("matchmaking", "autoscaling"),
                  ("botWorker", "scaling"), ("fairplay", "scaling")):
        node = values_table.schema_node(schema, where + ("maxReplicas",)) or {}
        c.check("refuses" in node.get("description", ""),
                f"values.schema.json says the render refuses {'.'.join(where)}.maxReplicas below minReplicas")


def check_backup_script(c: Checks) -> None:
    """The backup CronJob's script, run here with a stand-in pg_dump (no Postgres): it calls
    pg_dump in the custom format on the Secret's URL, publishes the dump only once written
    whole, keeps the newest `backup.keep` dumps (and no other release's files), and a failed
    dump fails the run and leaves the kept ones alone."""
    keep = 3
    objects = render({"backup": {"enabled": True, "existingClaim": "frontier-backups", "keep": keep}})
    cj = next(o for o in objects if o["kind"] == "CronJob")
    ctr = cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    script = ctr["args"][0]
    env_values = {e["name"]: e["value"] for e in ctr["env"] if "value" in e}
    sh = shutil.which("sh")
    if not c.check(ctr["command"] == ["/bin/sh", "-c"] and sh is not None, "the backup script runs under sh"):
        return
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        bindir, backups = tmp / "bin", tmp / "backups"
        bindir.mkdir()
        backups.mkdir()
        stub = bindir / "pg_dump"
        stub.write_text('#!/bin/sh\n'
                        'echo "$@" > "$STUB_LOG"\n'
                        '[ -z "${STUB_FAIL:-}" ] || { echo "pg_dump: connection refused" >&2; exit 1; }\n'
                        'for a in "$@"; do case "$a" in --file=*) f="${a#--file=}";; esac; done\n'
                        'printf "PGDMP stand-in" > "$f"\n')
        stub.chmod(0o755)
        prefix = env_values["BACKUP_PREFIX"]
        old = [f"{prefix}-2026010{d}T031700Z.dump" for d in range(1, 6)]
        for name in old + [f"{prefix}-eu-20250101T000000Z.dump", f"{prefix}-20260106T031700Z.dump.partial"]:
            (backups / name).write_text("old")
        env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", BACKUP_DIR=str(backups),
                   BACKUP_PREFIX=prefix, BACKUP_KEEP=env_values["BACKUP_KEEP"],
                   DATABASE_URL="postgres://frontier:pw@db:5432/frontier", STUB_LOG=str(tmp / "log"))
        run = subprocess.run([sh, "-c", script], env=env, capture_output=True, text=True)
        files = sorted(p.name for p in backups.iterdir())
        new = [f for f in files if f.startswith(prefix + "-2") and f not in old]
        args = (tmp / "log").read_text().split() if (tmp / "log").exists() else []
        c.check(run.returncode == 0 and "--format=custom" in args and args[-1] == env["DATABASE_URL"],
                f"the backup script runs pg_dump --format=custom on DATABASE_URL ({args}; {run.stderr.strip()[-300:]})")
        c.check(len(new) == 1 and (backups / new[0]).read_text() == "PGDMP stand-in" and not any(f.endswith(".partial") for f in files),
                f"the backup script leaves one new complete dump, no partial one ({files})")
        c.check(sorted(f for f in files if re.fullmatch(re.escape(prefix) + r"-\d{8}T\d{6}Z\.dump", f)) == sorted(old[-(keep - 1):] + new)
                and f"{prefix}-eu-20250101T000000Z.dump" in files,
                f"the backup script keeps the newest {keep} dumps and another release's files ({files})")
        before = sorted(p.name for p in backups.iterdir())
        env["STUB_FAIL"] = "1"
        run = subprocess.run([sh, "-c", script], env=env, capture_output=True, text=True)
        after = sorted(p.name for p in backups.iterdir())
        c.check(run.returncode != 0 and after == before, f"a failed pg_dump fails the run and removes nothing ({after})")


def check_notes(c: Checks) -> None:
    """NOTES.txt tells where to connect (the gateway's Service, or the Ingress's URL), the
    WebSocket path, how to see health, and `helm test`."""
    gateway = f"{RELEASE}-gateway"
    cases = [
        ("default values", {}, [f"port-forward service/{gateway} 8080:80", "ws://127.0.0.1:8080/ws/v1"]),
        ("production.yaml (Ingress, TLS)", load_values("production.yaml"),
         ["https://chess.example.org/", "wss://chess.example.org/ws/v1", f"get ingress {gateway}"]),
        ("a LoadBalancer Service", {"gateway": {"service": {"type": "LoadBalancer", "port": 443}}},
         [f"get service {gateway}", "ws://<address>:443/ws/v1"]),
        ("an Ingress without TLS", {"gateway": {"ingress": {"enabled": True, "host": "play.example.org"}}},
         ["http://play.example.org/", "ws://play.example.org/ws/v1",
          "invite links use platform.publicUrl (http://127.0.0.1:8080)"]),
    ]
    for label, values, wanted in cases:
        text = render_notes(values)
        wanted = wanted + [f"kubectl -n {K8S_NAMESPACE} get pods -l app.kubernetes.io/instance={RELEASE}",
                           f"port-forward deployment/{gateway} 9100:9100", "/readyz", "/metrics",
                           f"helm test {RELEASE} -n {K8S_NAMESPACE}", f"--gateway http://{gateway}:"]
        missing = [w for w in wanted if w not in text]
        c.check(not missing, f"NOTES.txt with {label} says {missing}")
    text = render_notes({"smokeTest": {"enabled": False}})
    c.check("nothing to run" in text and "frontier smoke" not in text, "NOTES.txt says when there is no test to run")


def check_ingress_defaults(c: Checks) -> None:
    """The Ingress is off by default, and switched on it carries ingress-nginx's WebSocket
    timeouts (an hour) without being told."""
    c.check(not [o for o in render({}) if o["kind"] == "Ingress"], "no Ingress by default")
    ing = [o for o in render({"gateway": {"ingress": {"enabled": True, "host": "chess.example.org"}}}) if o["kind"] == "Ingress"]
    notes = ing[0]["metadata"].get("annotations", {}) if ing else {}
    c.check(notes.get("nginx.ingress.kubernetes.io/proxy-read-timeout") == "3600"
            and notes.get("nginx.ingress.kubernetes.io/proxy-send-timeout") == "3600",
            f"the gateway's Ingress sets ingress-nginx's proxy-read/send-timeout to 3600 by default ({notes})")
    ing = [o for o in render({"gateway": {"ingress": {"enabled": True, "annotations": {
        "nginx.ingress.kubernetes.io/proxy-send-timeout": None, "example.org/x": "y"}}}}) if o["kind"] == "Ingress"]
    notes = ing[0]["metadata"].get("annotations", {}) if ing else {}
    c.check(notes == {"nginx.ingress.kubernetes.io/proxy-read-timeout": "3600", "example.org/x": "y"},
            f"Ingress annotations merge with the defaults, and null removes one ({notes})")


def check_the_checks(c: Checks) -> None:
    """Each assertion above must be able to fail: break one thing in a rendering, and the
    invariants must say so."""

    def first(objects, kind, name):
        return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)

    def gateway(objects):
        return first(objects, "Deployment", f"{RELEASE}-gateway")["spec"]["template"]["spec"]

    def trigger(objects):
        return first(objects, "ScaledObject", f"{RELEASE}-bot-worker")["spec"]["triggers"][0]["metadata"]

    def fp_trigger(objects):
        return first(objects, "ScaledObject", f"{RELEASE}-fairplay")["spec"]["triggers"][0]["metadata"]

    breaks = {
        "a consumer name KEDA would not find": lambda o: trigger(o).update(consumer="bot-worker"),
        "fair play scaled on rating's consumer": lambda o: fp_trigger(o).update(consumer="rating"),
        "fair play scaled on a consumer its pods do not use": lambda o: fp_trigger(o).update(consumer="fair-play"),
        "fair play scaled on the bot-job stream": lambda o: fp_trigger(o).update(stream="FRONTIER_BOT_JOBS"),
        "fair play without its ScaledObject": lambda o: o.remove(first(o, "ScaledObject", f"{RELEASE}-fairplay")),
        "fair play allowed to scale to zero": lambda o: first(o, "ScaledObject", f"{RELEASE}-fairplay")["spec"]
            .update(minReplicaCount=0),
        "fair play open to game-session": lambda o: first(o, "NetworkPolicy", f"{RELEASE}-fairplay")["spec"]["ingress"][0]
            ["from"][0]["podSelector"]["matchExpressions"][0]["values"].append("game-session"),
        "fair play without its database URL": lambda o: first(o, "Deployment", f"{RELEASE}-fairplay")["spec"]["template"]
            ["spec"]["containers"][0]["env"].pop(0),
        "the gateway given a wrong fair-play URL": lambda o: first(o, "ConfigMap", RELEASE)["data"]
            .update(FRONTIER_FAIRPLAY_URL=f"http://{RELEASE}-fairplay:9100"),
        "fair play given another node budget than values": lambda o: next(
            e for e in first(o, "Deployment", f"{RELEASE}-fairplay")["spec"]["template"]["spec"]["containers"][0]["env"]
            if e["name"] == "FRONTIER_FAIRPLAY_NODES").update(value="1"),
        "the stream of another namespace": lambda o: trigger(o).update(stream="OTHER_BOT_JOBS"),
        "a container without limits": lambda o: gateway(o)["containers"][0]["resources"].pop("limits"),
        "a container as root": lambda o: gateway(o)["securityContext"].update(runAsUser=0),
        "a writable root filesystem": lambda o: gateway(o)["containers"][0]["securityContext"].update(readOnlyRootFilesystem=False),
        "no readiness probe": lambda o: gateway(o)["containers"][0].pop("readinessProbe"),
        "a liveness probe that fails during the drain": lambda o: gateway(o)["containers"][0]["livenessProbe"].update(failureThreshold=1),
        "a grace period shorter than the drain": lambda o: gateway(o).update(terminationGracePeriodSeconds=10),
        "game-session open to rating": lambda o: first(o, "NetworkPolicy", f"{RELEASE}-game-session")["spec"]["ingress"][0]
            ["from"][0]["podSelector"]["matchExpressions"][0]["values"].append("rating"),
        "no default-deny policy": lambda o: o.remove(first(o, "NetworkPolicy", f"{RELEASE}-default-deny")),
        "rating closed to matchmaking": lambda o: first(o, "NetworkPolicy", f"{RELEASE}-rating")["spec"]["ingress"][0]
            ["from"][0]["podSelector"]["matchExpressions"][0]["values"].remove("matchmaking"),
        "the matchmaking policy on another port": lambda o: first(o, "NetworkPolicy", f"{RELEASE}-matchmaking")["spec"]
            ["ingress"][0]["ports"][0].update(port=50055),
        "matchmaking without its Redis URL": lambda o: first(o, "Deployment", f"{RELEASE}-matchmaking")["spec"]["template"]
            ["spec"]["containers"][0]["env"].pop(0),
        "the gateway given a wrong matchmaking URL": lambda o: first(o, "ConfigMap", RELEASE)["data"]
            .update(FRONTIER_MATCHMAKING_URL=f"http://{RELEASE}-rating:50053"),
        "no HPA for matchmaking": lambda o: o.remove(first(o, "HorizontalPodAutoscaler", f"{RELEASE}-matchmaking")),
        "no PodDisruptionBudget for matchmaking": lambda o: o.remove(first(o, "PodDisruptionBudget", f"{RELEASE}-matchmaking")),
        "no matchmaking Deployment": lambda o: o.remove(first(o, "Deployment", f"{RELEASE}-matchmaking")),
        "a test Pod that restarts": lambda o: first(o, "Pod", f"{RELEASE}-test")["spec"].update(restartPolicy="OnFailure"),
        "a test Pod against another port": lambda o: first(o, "Pod", f"{RELEASE}-test")["spec"]["containers"][0]["args"]
            .__setitem__(2, f"http://{RELEASE}-gateway:9100"),
        "a test Pod that is not a hook": lambda o: first(o, "Pod", f"{RELEASE}-test")["metadata"]["annotations"].clear(),
        "a pod with a service-account token": lambda o: gateway(o).update(automountServiceAccountToken=True),
        "a ServiceAccount that mounts its token": lambda o: first(o, "ServiceAccount", f"{RELEASE}-clock")
            .update(automountServiceAccountToken=True),
        "two services sharing a ServiceAccount": lambda o: gateway(o).update(serviceAccountName=f"{RELEASE}-rating"),
        "a pod on the default ServiceAccount": lambda o: gateway(o).pop("serviceAccountName"),
        "the JWT secret given to rating": lambda o: first(o, "Deployment", f"{RELEASE}-rating")["spec"]["template"]["spec"]
            ["containers"][0]["env"].append({"name": "FRONTIER_JWT_SECRET", "value": "x"}),
    }
    for what, breaking in breaks.items():
        objects = render({})
        breaking(objects)
        scratch = Checks()
        with contextlib.redirect_stderr(io.StringIO()):
            assert_invariants(scratch, "broken", {}, objects)
        c.check(bool(scratch.failures), f"the invariants catch {what}")


# The values key of each service (its image.tag overrides the global one).
SERVICE_KEYS = {"gateway": "gateway", "game-session": "gameSession", "clock": "clock", "rating": "rating",
                "bot-worker": "botWorker", "matchmaking": "matchmaking", "fairplay": "fairplay"}


def frontier_images(objects: list[dict]) -> dict[str, str]:
    """The Frontier image of each component's pods (the `helm test` Pod, `test`, included)."""
    images = {}
    for obj, spec in pod_specs(objects, every=True):
        comp = obj["metadata"]["labels"].get("app.kubernetes.io/component")
        if comp in SERVICES or comp == "test":
            images[comp] = spec["containers"][0]["image"]
    return images


def check_image_tags(c: Checks) -> None:
    """Per-service image tags: an override lands on its service alone (the `helm test` Pod
    follows the gateway's: it is a client of that gateway); the others keep the global tag,
    else the chart's appVersion."""
    import helm_python as helm

    with helm.Chart.load(str(CHART)) as chart:
        app_version = chart.metadata["appVersion"]
    base = load_values("production.yaml")
    repo = base["image"]["repository"]
    every = {"matchmaking": {"enabled": True}, "botWorker": {"enabled": True}, "fairplay": {"enabled": True}}
    plain = frontier_images(render(deep_merge(copy.deepcopy(base), copy.deepcopy(every))))
    c.check(set(plain) >= set(SERVICES) and set(plain.values()) == {f"{repo}:{base['image']['tag']}"},
            f"without overrides every service runs the global image ({plain})")
    defaults = frontier_images(render({}))
    c.check(set(defaults.values()) == {f"frontier:{app_version}"}, f"an empty image.tag is the appVersion ({defaults})")
    for comp, vkey in SERVICE_KEYS.items():
        values = deep_merge(copy.deepcopy(base), copy.deepcopy(every))
        deep_merge(values, {vkey: {"image": {"tag": f"9.9.9-{comp}"}}})
        images = frontier_images(render(values))
        want = {k: (f"{repo}:9.9.9-{comp}" if comp in (k, "gateway" if k == "test" else None) else plain[k]) for k in plain}
        c.check(images == want, f"{vkey}.image.tag lands on {comp} alone: {images}")


def check_bad_values(c: Checks) -> None:
    import helm_python as helm

    # The bound the render enforces (frontier.validate) refuses only what is below it.
    equal = {k: {"autoscaling": {"minReplicas": 3, "maxReplicas": 3}} for k in ("gateway", "gameSession", "matchmaking")}
    equal["botWorker"] = {"scaling": {"minReplicas": 2, "maxReplicas": 2}}
    equal["fairplay"] = {"scaling": {"minReplicas": 2, "maxReplicas": 2}}
    try:
        render(equal)
        c.check(True, "maxReplicas equal to minReplicas is accepted")
    except helm.HelmError as e:
        c.check(False, f"maxReplicas equal to minReplicas is accepted (said: {str(e).strip()[:200]})")
    files = sorted(BAD_VALUES.glob("*.yaml"))
    c.check(len(files) > 0, "bad values files exist")
    for path in files:
        text = path.read_text()
        expect = re.search(r"^# expect: (.+)$", text, re.M)
        try:
            render(yaml.safe_load(text))
            c.check(False, f"bad values {path.name}: accepted, should be refused")
        except helm.HelmError as e:
            c.check(expect is not None and expect.group(1) in str(e),
                    f"bad values {path.name}: refused for {expect.group(1) if expect else '?'} (said: {str(e).strip()[:200]})")


def check_k8s_fresh(c: Checks) -> None:
    want = k8s_tree()
    have = {str(p.relative_to(K8S)): p.read_text() for p in K8S.rglob("*") if p.is_file()} if K8S.exists() else {}
    stale = sorted(set(want) ^ set(have)) + sorted(k for k in want if k in have and want[k] != have[k])
    c.check(not stale, f"k8s/ is what the chart renders (run `make k8s`); differs: {stale[:5]}")
    # Each overlay is exactly one rendering of the chart: base + its own files.
    for overlay, files in [("dev", ("k8s-common.yaml", "k8s-dev.yaml")), ("prod", ("k8s-common.yaml", "k8s-prod.yaml"))]:
        rendered = sorted(map(key, render_k8s(load_values(*files))))
        listed = []
        for folder in ("base", f"overlays/{overlay}"):
            kust = yaml.safe_load(want[f"{folder}/kustomization.yaml"])
            for res in kust["resources"]:
                if not res.startswith(".."):
                    listed.append(key(yaml.safe_load(want[f"{folder}/{res}"])))
        c.check(sorted(listed) == rendered, f"k8s/overlays/{overlay} holds exactly the chart's objects")
    hooks = [rel for rel, text in want.items() if "helm.sh/hook" in text]
    c.check(not hooks, f"k8s/ holds no Helm hook (the `helm test` Pod is Helm's): {hooks}")


# ---------------------------------------------------------------------------------------
# Monitoring: alerts (promtool), runbook anchors, dashboards, metric names


def promtool(c: Checks) -> str | None:
    """The promtool binary; installs Debian's `prometheus` package when it is missing (as
    root with apt-get), stopping any Prometheus that installing started. None: missing."""
    found = shutil.which("promtool")
    if found:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        print("deploy-check: promtool missing; apt-get install prometheus (for promtool)", file=sys.stderr)

        def running() -> set[int]:
            if not shutil.which("pgrep"):
                return set()
            out = subprocess.run(["pgrep", "-x", "prometheus"], capture_output=True, text=True).stdout
            return {int(p) for p in out.split()}

        before = running()
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "prometheus"]
        if subprocess.run(install, env=env).returncode != 0:
            subprocess.run(["apt-get", "update", "-qq"], env=env)
            subprocess.run(install, env=env)
        # The package's service must not keep running (nor hold port 9090).
        if shutil.which("systemctl"):
            subprocess.run(["systemctl", "disable", "--now", "prometheus"], capture_output=True)
        for pid in running() - before:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 15)
        found = shutil.which("promtool")
    c.check(found is not None, "promtool is installed (Debian: apt-get install prometheus); "
            "the alert unit tests cannot run without it")
    return found


def rule_groups(objects: list[dict]) -> list[dict]:
    return [g for o in objects if o["kind"] == "PrometheusRule" for g in o["spec"]["groups"]]


def github_anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown text (outside code fences)."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    fence = None
    for line in markdown.splitlines():
        m = re.match(r"^\s{0,3}(```+|~~~+)", line)
        if m:
            if fence is None:
                fence = m.group(1)[0]
            elif m.group(1)[0] == fence:
                fence = None
            continue
        if fence is not None:
            continue
        h = re.match(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not h:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", h.group(1))  # a link's text
        slug = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def runbook_problems(groups: list[dict], base: str, markdown: str) -> list[str]:
    """Alerts whose runbook_url is not `<base>#<a heading of the runbook>`."""
    anchors = github_anchors(markdown)
    problems = []
    for g in groups:
        for r in g["rules"]:
            url = r.get("annotations", {}).get("runbook_url", "")
            page, _, anchor = url.partition("#")
            if page != base or anchor not in anchors:
                problems.append(f"{r['alert']}: {url!r}")
    return problems


def alert_test_gaps(groups: list[dict], tests: dict) -> list[str]:
    """Alerts without a test case where they fire, or without one where they do not."""
    fires, quiet = set(), set()
    for t in tests.get("tests", []):
        for a in t.get("alert_rule_test", []):
            (fires if a.get("exp_alerts") else quiet).add(a["alertname"])
    alerts = [r["alert"] for g in groups for r in g["rules"]]
    return ([f"{a}: no case where it fires" for a in alerts if a not in fires]
            + [f"{a}: no case where it stays quiet" for a in alerts if a not in quiet])


def check_monitoring(c: Checks) -> None:
    import helm_python as helm

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import dashboards
    import metric_names

    on = {"metrics": {"prometheusRule": {"enabled": True}, "dashboards": {"enabled": True}}}
    objects = render(on)
    groups = rule_groups(objects)
    c.check(len(groups) > 0, "the PrometheusRule renders alert groups")
    c.check(not rule_groups(render({})), "no PrometheusRule by default")
    alerts = [r["alert"] for g in groups for r in g["rules"]]
    c.check(len(alerts) == len(set(alerts)), f"alert names are unique ({alerts})")
    for g in groups:
        for r in g["rules"]:
            c.check(r.get("labels", {}).get("severity") in ("warning", "critical")
                    and r.get("annotations", {}).get("summary"), f"alert {r['alert']}: a severity and a summary")

    # The runbook: one heading per alert, as each runbook_url says.
    with helm.Chart.load(str(CHART)) as chart:
        base = chart.merge_values({})["metrics"]["prometheusRule"]["runbookUrl"]
    markdown = RUNBOOK.read_text() if RUNBOOK.exists() else ""
    c.check(bool(markdown), f"{RUNBOOK.relative_to(ROOT)} exists")
    problems = runbook_problems(groups, base, markdown)
    c.check(not problems, f"every runbook_url is {base}#<a heading of docs/runbook.md>: {problems}")
    c.check(bool(runbook_problems([{"rules": [{"alert": "X", "annotations": {"runbook_url": f"{base}#no-such-heading"}}]}],
                                  base, markdown)), "the runbook check catches an anchor with no heading")
    dangling = sorted(set(re.findall(r"\]\(#([^)\s]+)\)", markdown)) - github_anchors(markdown))
    c.check(not dangling, f"docs/runbook.md's links to its own headings resolve: {dangling}")
    c.check(github_anchors("# A `b` c?\n```\n# not a heading\n```\n## A b c\n") == {"a-b-c", "a-b-c-1"},
            "GitHub anchors: punctuation dropped, spaces as hyphens, repeats numbered, code blocks skipped")

    # Every alert has a case where it fires and one where it does not.
    tests = yaml.safe_load(ALERT_TESTS.read_text())
    gaps = alert_test_gaps(groups, tests)
    c.check(not gaps, f"{ALERT_TESTS.name} covers every alert both ways: {gaps}")
    c.check(bool(alert_test_gaps(groups + [{"rules": [{"alert": "Untested"}]}], tests)),
            "the coverage check catches an alert without tests")

    # promtool: the rules as rendered, then their unit tests.
    binary = promtool(c)
    if binary:
        variants = [("default values", on),
                    ("without bot-workers, matchmaking and fair play", {**on, "botWorker": {"enabled": False},
                                                                        "matchmaking": {"enabled": False},
                                                                        "fairplay": {"enabled": False}})]
        with tempfile.TemporaryDirectory() as tmp:
            for label, values in variants:
                rules = Path(tmp) / "rules.yaml"
                rules.write_text(yaml.safe_dump({"groups": rule_groups(render(values))}, sort_keys=False))
                out = subprocess.run([binary, "check", "rules", str(rules)], capture_output=True, text=True)
                c.check(out.returncode == 0, f"promtool check rules ({label}): {(out.stdout + out.stderr).strip()[-800:]}")
            rules.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
            shutil.copy(ALERT_TESTS, Path(tmp) / ALERT_TESTS.name)
            out = subprocess.run([binary, "test", "rules", ALERT_TESTS.name], cwd=tmp, capture_output=True, text=True)
            c.check(out.returncode == 0, f"promtool test rules {ALERT_TESTS.name}: {(out.stdout + out.stderr).strip()[-3000:]}")
            # …and the tests can fail: with a threshold changed, a case must break.
            broken = copy.deepcopy(groups)
            for g in broken:
                for r in g["rules"]:
                    r["expr"] = re.sub(r">\s*[0-9.]+\s*$", "> 1e9", r["expr"])
            rules.write_text(yaml.safe_dump({"groups": broken}, sort_keys=False))
            out = subprocess.run([binary, "test", "rules", ALERT_TESTS.name], cwd=tmp, capture_output=True, text=True)
            c.check(out.returncode != 0, "the alert tests fail when the thresholds are out of reach")

    # Dashboards: what the generator writes, one ConfigMap each, labelled for the sidecar.
    stale = dashboards.stale()
    c.check(not stale, f"the dashboards are what deploy/check/dashboards.py generates (run it): {stale}")
    maps = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith(f"{RELEASE}-dashboard-")]
    c.check(sorted(m["metadata"]["name"] for m in maps) == sorted(f"{RELEASE}-dashboard-{n}" for n in dashboards.BOARDS),
            f"a dashboard ConfigMap for each of {sorted(dashboards.BOARDS)}")
    for m in maps:
        ok = m["metadata"]["labels"].get("grafana_dashboard") == "1"
        for name, text in m["data"].items():
            board = json.loads(text)
            ok = ok and "__NAMESPACE__" not in text and "__FULLNAME__" not in text and board.get("uid")
        c.check(bool(ok), f"ConfigMap {m['metadata']['name']}: labelled grafana_dashboard=1, a dashboard with its variables filled")
    c.check(not [o for o in render({}) if o["metadata"]["name"].startswith(f"{RELEASE}-dashboard-")], "no dashboards by default")

    # Metric names: every one queried is defined in the sources (or listed external).
    where = metric_names.queried(objects)
    exported = metric_names.exported_static()
    gone = metric_names.missing(where, exported)
    c.check(not gone, "every metric name queried is defined in services/ or libs/: "
            + "; ".join(f"{n} ({', '.join(sorted(p))})" for n, p in sorted(gone.items())))
    strange = metric_names.unknown_external(where)
    c.check(not strange, f"every name queried is frontier_* or listed in metric_names.EXTERNAL: {strange}")
    c.check(len([n for n in where if n.startswith("frontier_")]) >= 20, "the alerts and dashboards query frontier metrics")
    for typo in ["frontier_gateway_ws_conections", "frontier_grpc_server_duration_seconds",
                 "frontier_gateway_refusals_total_bucket"]:
        c.check(typo in metric_names.missing({typo: {"self-test"}}, exported),
                f"the metric-name check catches {typo}")


def check() -> int:
    import helm_python as helm

    c = Checks()
    variants = [
        ("default values", {}),
        ("production.yaml", load_values("production.yaml")),
        ("production.yaml without matchmaking and KEDA", load_values("production.yaml", extra={
            "matchmaking": {"enabled": False}, "keda": {"enabled": False}})),
        ("production.yaml, platform namespace chess-eu-1", load_values("production.yaml", extra={
            "platform": {"namespace": "chess-eu-1"}})),
        ("production.yaml, game-session writing storage format 2", load_values("production.yaml", extra={
            "gameSession": {"storageFormat": 2}})),
        ("production.yaml, game-session writing event metadata in the payload", load_values(
            "production.yaml", extra={"gameSession": {"eventMetadata": "payload"}})),
        ("production.yaml without fair play", load_values("production.yaml", extra={"fairplay": {"enabled": False}})),
        ("production.yaml, fair play on consumer fairplay-eu, 4 at once", load_values("production.yaml", extra={
            "fairplay": {"consumer": "fairplay-eu", "concurrency": 4}})),
        ("dev mode", load_values("k8s-common.yaml", "k8s-dev.yaml")),
        ("dev mode with backups", load_values("k8s-common.yaml", "k8s-dev.yaml", extra={
            "backup": {"enabled": True, "existingClaim": "frontier-backups"}})),
        ("k8s prod", load_values("k8s-common.yaml", "k8s-prod.yaml")),
    ]
    for label, values in variants:
        print(f"deploy-check: {label}")
        report = helm.lint(str(CHART), values, strict=True, namespace=K8S_NAMESPACE, kube_version="v" + KUBE_VERSIONS[0])
        errors = [m for m in report["messages"] if m["severity"] >= 2 and "icon is recommended" not in m["error"]]
        c.check(not errors and not report["errors"], f"{label}: helm lint --strict: {errors or report['errors']}")
        objects = render(values)
        if not values:
            # The defaults run every service, quick match and the computer player included.
            running = sorted(o["metadata"]["labels"]["app.kubernetes.io/component"] for o in objects if o["kind"] == "Deployment")
            c.check(running == sorted(SERVICES), f"{label}: every service runs by default ({running})")
        validate_schemas(c, label, objects)
        assert_invariants(c, label, values, objects)
    print("deploy-check: the checks catch what they are for")
    check_the_checks(c)
    print("deploy-check: values.yaml documented, deploy/README.md's values table")
    check_values_docs(c)
    print("deploy-check: the backup CronJob's script")
    c.check(not [o for o in render({}) if o["kind"] == "CronJob"], "no backup CronJob by default")
    check_backup_script(c)
    print("deploy-check: NOTES.txt")
    check_notes(c)
    print("deploy-check: the gateway's Ingress")
    check_ingress_defaults(c)
    print("deploy-check: per-service image tags")
    check_image_tags(c)
    print("deploy-check: values the schema must refuse")
    check_bad_values(c)
    print("deploy-check: k8s/ up to date")
    check_k8s_fresh(c)
    print("deploy-check: alerts (promtool), runbook anchors, dashboards, metric names")
    check_monitoring(c)
    if c.failures:
        print(f"deploy-check: {len(c.failures)} of {c.passed + len(c.failures)} checks FAILED", file=sys.stderr)
        return 1
    print(f"deploy-check: all {c.passed} checks passed")
    return 0


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else "check"
    if command == "k8s":
        write_k8s()
    elif command == "check":
        sys.exit(check())
    else:
        sys.exit(__doc__)
