#!/usr/bin/env python3
"""The signal KEDA scales bot-workers on, measured the way KEDA reads it, with the real
bot-worker playing real bot jobs.

Starts a throwaway NATS with JetStream and its monitoring port (or uses --nats-url and
--monitoring), a real `frontier game-session` on it and on Redis (--redis-url, or
FRONTIER_TEST_REDIS_URL as scripts/test-services.sh provides), and one real
`frontier bot-worker` (FRONTIER_BOT_CONCURRENCY=1: one job at a time, as a one-core pod),
which makes the durable consumer `bot-workers` on the work queue `<NS>_BOT_JOBS` itself.
Then:

  1. many games against the computer are opened at once through game-session's
     `PlayComputer` rpc, the computer White, so each owes a move at once: game-session
     enqueues one real bot job per game (through its Redis outbox). They arrive far faster
     than one worker thinks (each decision is the level's real search): the lag KEDA reads
     (the consumer's num_pending + num_ack_pending in /jsz) must rise above the threshold;
  2. a second worker starts (what KEDA would do, asking for ceil(lag / lagThreshold)):
     the lag must return to 0, the work queue empty;
  3. every game has the computer's move (its version moved past creation, read back with
     `GetView`), each worker's /metrics counts the moves it made, the second worker made
     some, and together they made one per game.

The lag is read from `/jsz?acc=<account>&consumers=true&config=true`, KEDA's own request
(pkg/scalers/nats_jetstream_scaler.go), and looked up as KEDA does: account, then stream,
then consumer by name. KEDA silently falls back to the stream's last sequence when the
consumer is not found; here that fails the check.

gRPC comes from `grpcio`, the messages from the repository's proto/ compiled at run time
with `grpcio-tools` (deploy/check/requirements.txt). Every wait polls a condition with a
deadline (--timeout a phase).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROTO = ROOT / "proto"
NAMES_RS = ROOT / "libs" / "platform" / "src" / "names.rs"


def platform_names() -> tuple[str, str]:
    """From libs/platform/src/names.rs: the bot-workers consumer and the stream's suffix."""
    text = NAMES_RS.read_text()
    consumer = re.search(r'pub const BOT_WORKERS_CONSUMER: &str = "([^"]+)";', text)
    stream = re.search(r'fn bot_jobs_stream\(&self\) -> String \{\s*format!\(\s*"\{\}(_[A-Z_]+)"', text)
    if not consumer or not stream:
        sys.exit("scaling-check: cannot find BOT_WORKERS_CONSUMER or bot_jobs_stream in names.rs")
    return consumer.group(1), stream.group(1)


CONSUMER, STREAM_SUFFIX = platform_names()


def bot_jobs_stream(namespace: str) -> str:
    """names.rs: Namespace::bot_jobs_stream."""
    return namespace.upper().replace("-", "_") + STREAM_SUFFIX


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fail(what: str) -> None:
    raise SystemExit(f"scaling-check: FAIL: {what}")


def poll(what: str, probe, timeout: float, every: float = 0.1):
    """Calls probe() until it returns something true, at most `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = probe()
        if got:
            return got
        if time.monotonic() > deadline:
            fail(f"{what} not seen within {timeout:.0f} s")
        time.sleep(every)


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def read_lag(monitoring: str, account: str, stream: str, consumer: str) -> dict | None:
    """One read of /jsz as KEDA's nats-jetstream scaler makes it; None while the stream is
    not there yet."""
    url = f"http://{monitoring}/jsz?acc={account}&consumers=true&config=true"
    with urllib.request.urlopen(url, timeout=5) as r:
        body = json.load(r)
    for acc in body.get("account_details") or []:
        if acc.get("name") != account:
            continue
        for st in acc.get("stream_detail") or []:
            if st.get("name") != stream:
                continue
            for co in st.get("consumer_detail") or []:
                if co.get("name") == consumer:
                    return {"lag": co["num_pending"] + co["num_ack_pending"], "pending": co["num_pending"],
                            "ack_pending": co["num_ack_pending"], "messages": st["state"]["messages"],
                            "found": True}
            # KEDA's fallback: the stream's last sequence, as if it were the lag.
            return {"lag": st["state"]["last_seq"], "found": False}
    return None


def compile_protos(out: Path):
    """game_session.proto and game.proto as Python modules (grpcio-tools' protoc)."""
    from grpc_tools import protoc
    import grpc_tools

    include = str(Path(grpc_tools.__file__).parent / "_proto")
    files = ["frontier/games/v1/game.proto", "frontier/gamesession/v1/game_session.proto"]
    out.mkdir(parents=True, exist_ok=True)
    code = protoc.main(["protoc", f"-I{PROTO}", f"-I{include}", f"--python_out={out}",
                        f"--grpc_python_out={out}", *files])
    if code != 0:
        fail(f"protoc could not compile {files}")
    sys.path.insert(0, str(out))
    from frontier.games.v1 import game_pb2
    from frontier.gamesession.v1 import game_session_pb2, game_session_pb2_grpc
    return game_pb2, game_session_pb2, game_session_pb2_grpc


class Process:
    """A child process whose output goes to a log file (shown when the check fails)."""

    def __init__(self, name: str, cmd: list[str], env: dict, folder: str) -> None:
        self.name = name
        self.log_path = Path(folder) / f"{name}.log"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def tail(self, lines: int = 15) -> str:
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(f"  {self.name}| {line}" for line in text[-lines:])


class Run:
    def __init__(self, args: argparse.Namespace, folder: str) -> None:
        self.args = args
        self.folder = folder
        self.processes: list[Process] = []
        self.workers: list[tuple[Process, str]] = []  # (process, its admin address)
        self.stream = bot_jobs_stream(args.namespace)
        self.t0 = time.monotonic()
        self.samples: list[tuple[float, int, int]] = []  # (seconds, lag, workers)

    def env(self, admin: str, **extra: str) -> dict:
        a = self.args
        env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTIER_")}
        env.update(FRONTIER_NATS_URL=a.nats_url, FRONTIER_REDIS_URL=a.redis_url, FRONTIER_NAMESPACE=a.namespace,
                   FRONTIER_ADMIN_LISTEN=admin, FRONTIER_LOG_JSON="0", FRONTIER_DRAIN_TIMEOUT="5s",
                   RUST_LOG=os.environ.get("RUST_LOG", "warn"), **extra)
        return env

    def start(self, name: str, service: str, admin: str, **extra: str) -> Process:
        p = Process(name, [self.args.frontier, service], self.env(admin, **extra), self.folder)
        self.processes.append(p)
        poll(f"{name}'s /readyz", lambda: http_ok(f"http://{admin}/readyz") or self.died(p), self.args.timeout)
        return p

    def died(self, p: Process) -> bool:
        if not p.alive():
            fail(f"{p.name} exited ({p.proc.returncode}):\n{p.tail()}")
        return False

    def start_worker(self) -> None:
        admin = f"127.0.0.1:{free_port()}"
        n = len(self.workers) + 1
        p = self.start(f"bot-worker-{n}", "bot-worker", admin, FRONTIER_GAME_SESSION_URLS=self.game_session_url,
                       FRONTIER_BOT_CONCURRENCY="1")
        self.workers.append((p, admin))
        print(f"scaling-check: bot-worker {n} started (one job at a time)")

    def lag(self) -> dict:
        a = self.args
        reading = read_lag(a.monitoring, a.account, self.stream, CONSUMER)
        if reading is None:
            fail(f"/jsz has no stream {self.stream} in account {a.account}")
        if not reading["found"]:
            fail(f"consumer {CONSUMER} not in /jsz: KEDA would read the stream's last sequence "
                 f"({reading['lag']}) instead")
        for p in self.processes:
            self.died(p)
        self.samples.append((time.monotonic() - self.t0, reading["lag"], len(self.workers)))
        return reading

    def until(self, what: str, condition) -> dict:
        """Reads the lag every 100 ms (KEDA: every pollingInterval) until condition holds."""
        last = {}

        def probe():
            last["r"] = self.lag()
            return last["r"] if condition(last["r"]) else None

        try:
            return poll(what, probe, self.args.timeout)
        except SystemExit:
            fail(f"{what} not seen within {self.args.timeout:.0f} s (last reading {last.get('r')}, "
                 f"{len(self.workers)} workers)")

    def moves_made(self, admin: str) -> int:
        """The moves a worker made and acknowledged (its frontier_bot_jobs_total)."""
        with urllib.request.urlopen(f"http://{admin}/metrics", timeout=5) as r:
            text = r.read().decode()
        total = 0
        for line in text.splitlines():
            if line.startswith("frontier_bot_jobs_total{") and 'outcome="moved"' in line:
                total += int(float(line.rsplit(" ", 1)[1]))
        return total

    def main(self) -> None:
        import grpc

        a = self.args
        game_pb2, gs_pb2, gs_grpc = compile_protos(Path(self.folder) / "proto")
        listen = f"127.0.0.1:{free_port()}"
        self.game_session_url = f"http://{listen}"
        self.start("game-session", "game-session", f"127.0.0.1:{free_port()}", FRONTIER_GAME_SESSION_LISTEN=listen)
        threshold = a.lag_threshold
        desired = lambda lag: math.ceil(lag / threshold)  # the HPA's average-value target
        print(f"scaling-check: stream {self.stream}, consumer {CONSUMER}, lagThreshold {threshold}, "
              f"{a.games} games against the computer ({a.level})")
        self.start_worker()
        # The worker makes the durable consumer (with its own settings) as it starts pulling.
        poll(f"the worker's consumer {CONSUMER} in /jsz",
             lambda: (r := read_lag(a.monitoring, a.account, self.stream, CONSUMER)) is not None and r["found"],
             a.timeout)

        channel = grpc.insecure_channel(listen)
        stub = gs_grpc.GameSessionStub(channel)
        level = getattr(game_pb2, f"BOT_LEVEL_{a.level.upper()}")

        def play_computer(i: int):
            person = game_pb2.Player(id=str(uuid.uuid4()), name=f"scaling {i}", guest=True)
            r = stub.PlayComputer(gs_pb2.PlayComputerRequest(
                player=person, variant=game_pb2.VARIANT_STANDARD, level=level,
                color=gs_pb2.COLOR_CHOICE_BLACK), timeout=30)
            return r.game_id, person.id, r.version

        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
            games = list(pool.map(play_computer, range(a.games)))
        print(f"scaling-check: {len(games)} games opened, each owing the computer's first move")

        high = self.until(f"lag above {threshold}", lambda r: r["lag"] > threshold)
        print(f"scaling-check: one worker: lag {high['lag']} (pending {high['pending']}, "
              f"unacknowledged {high['ack_pending']}) > {threshold}: KEDA asks for {desired(high['lag'])} workers")
        self.start_worker()
        self.t0 = time.monotonic()
        self.samples.clear()
        end = self.until("lag 0 and the work queue empty", lambda r: r["lag"] == 0 and r["messages"] == 0)
        print(f"scaling-check: two workers: lag {end['lag']}, {end['messages']} jobs left in the work queue; "
              f"not above activation ({a.activation_threshold}): KEDA scales back to the minimum")
        if end["lag"] > a.activation_threshold:
            fail("lag still above the activation threshold")
        # The lag as KEDA would have seen it, about once a second, after the second worker came.
        shown, next_at = [], 0.0
        for t, lag, _ in self.samples:
            if t >= next_at or lag == 0:
                shown.append(f"{t:.0f}s:{lag}")
                next_at = t + 1
        print(f"scaling-check: the lag with two workers: {' '.join(shown)}")

        # The jobs were real: every game has the computer's move, made by the two workers.
        behind = []
        for game_id, player_id, created in games:
            view = stub.GetView(gs_pb2.GetViewRequest(game_id=game_id, player_id=player_id), timeout=10)
            if view.version <= created:
                behind.append(game_id)
        if behind:
            fail(f"{len(behind)} games without the computer's move, e.g. {behind[0]}")
        made = [self.moves_made(admin) for _, admin in self.workers]
        print(f"scaling-check: every game has the computer's move; moves made by each worker: {made}")
        if made[1] == 0:
            fail("the second worker made no move")
        if sum(made) != len(games):
            fail(f"the workers made {sum(made)} moves for {len(games)} jobs")
        channel.close()
        print("scaling-check: passed")

    def stop(self) -> None:
        for p in reversed(self.processes):
            p.stop(timeout=self.args.timeout)


def start_nats(folder: str) -> tuple[subprocess.Popen, str, str]:
    binary = shutil.which("nats-server")
    if not binary:
        subprocess.run(["apt-get", "update", "-qq"], check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["apt-get", "install", "-y", "-qq", "nats-server"], check=True, stdout=subprocess.DEVNULL,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        binary = shutil.which("nats-server")
    port, monitoring = free_port(), free_port()
    proc = subprocess.Popen([binary, "-a", "127.0.0.1", "-p", str(port), "-js", "-sd", folder,
                             "-m", str(monitoring)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    poll("nats-server's /healthz",
         lambda: http_ok(f"http://127.0.0.1:{monitoring}/healthz?js-enabled-only=true")
         or (proc.poll() is not None and fail("nats-server exited")), 10)
    return proc, f"nats://127.0.0.1:{port}", f"127.0.0.1:{monitoring}"


def default_frontier() -> str:
    target = os.environ.get("CARGO_TARGET_DIR") or str(ROOT / "target")
    return str(Path(target) / "debug" / "frontier")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--frontier", default=default_frontier(), help="the frontier binary (default: the debug build)")
    p.add_argument("--redis-url", default=os.environ.get("FRONTIER_TEST_REDIS_URL"),
                   help="Redis for game-session (default: FRONTIER_TEST_REDIS_URL)")
    p.add_argument("--nats-url", help="an existing NATS (JetStream); default: a throwaway one")
    p.add_argument("--monitoring", help="its monitoring endpoint host:port (with --nats-url)")
    p.add_argument("--account", default="$G")
    run_id = os.environ.get("FRONTIER_TEST_RUN")  # test-services.sh removes t<run>-* keys
    p.add_argument("--namespace", default=f"t{run_id}-scaling" if run_id else f"scaling-{os.getpid()}",
                   help="FRONTIER_NAMESPACE")
    p.add_argument("--games", type=int, default=30, help="games against the computer, one bot job each")
    p.add_argument("--level", default="medium", choices=["easy", "medium", "hard"], help="the computer's level")
    p.add_argument("--lag-threshold", type=int, default=10, help="the ScaledObject's lagThreshold")
    p.add_argument("--activation-threshold", type=int, default=0, help="its activationLagThreshold")
    p.add_argument("--timeout", type=float, default=60, help="seconds to wait for each phase")
    args = p.parse_args()
    if not args.redis_url:
        sys.exit("scaling-check: --redis-url (or FRONTIER_TEST_REDIS_URL: scripts/test-services.sh) is needed")
    if not os.access(args.frontier, os.X_OK):
        sys.exit(f"scaling-check: no frontier binary at {args.frontier} (cargo build -p frontier)")
    if args.games < 2 * args.lag_threshold:
        sys.exit("scaling-check: --games must be at least twice --lag-threshold (the lag must rise above it "
                 "while one worker works)")
    with tempfile.TemporaryDirectory(prefix="frontier-scaling-") as folder:
        server = None
        if not args.nats_url:
            server, args.nats_url, args.monitoring = start_nats(folder)
        elif not args.monitoring:
            sys.exit("scaling-check: --monitoring host:port is needed with --nats-url")
        run = Run(args, folder)
        try:
            run.main()
        except SystemExit:
            for proc in run.processes:
                print(proc.tail(), file=sys.stderr)
            raise
        finally:
            run.stop()
            if server:
                server.terminate()
                server.wait(timeout=10)


if __name__ == "__main__":
    main()
