#!/usr/bin/env python3
"""The signal KEDA scales bot-workers on, measured the way KEDA reads it.

Starts a throwaway NATS with JetStream and its monitoring port (or uses --nats-url and
--monitoring), creates the bot-job work queue `<NS>_BOT_JOBS` and the durable consumer
`bot-workers` as the services do (libs/platform: names.rs, streams.rs), then:

  1. one worker drains while jobs arrive faster than it can take them: the lag KEDA reads
     (the consumer's num_pending + num_ack_pending in /jsz) must rise above the threshold;
  2. a second worker starts (what KEDA would do) while jobs keep arriving at the same rate:
     the backlog must drain (no job waiting, the lag no more than the threshold: only the
     jobs in the workers' hands);
  3. the arrivals stop: the lag returns to 0, every job acknowledged and gone from the
     work queue.

The lag is read from `/jsz?acc=<account>&consumers=true&config=true`, KEDA's own request
(pkg/scalers/nats_jetstream_scaler.go), and looked up as KEDA does: account, then stream,
then consumer by name. KEDA silently falls back to the stream's last sequence when the
consumer is not found; here that fails the check.

The worker is a parameter: --worker-cmd 'frontier bot-worker' runs the real one (given
FRONTIER_NATS_URL, FRONTIER_NAMESPACE, FRONTIER_GAME_SESSION_URL and FRONTIER_ADMIN_LISTEN
in its environment); without it a stand-in (this script with --stand-in-worker) takes one
job at a time and spends --work-ms on each. The rates must suit the worker: the arrival
rate must be above one worker's speed and below two workers'.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

CONSUMER = "bot-workers"  # names.rs: BOT_WORKERS_CONSUMER


def bot_jobs_stream(namespace: str) -> str:
    """names.rs: Namespace::bot_jobs_stream."""
    return namespace.upper().replace("-", "_") + "_BOT_JOBS"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_lag(monitoring: str, account: str, stream: str, consumer: str) -> dict:
    """One read of /jsz as KEDA's nats-jetstream scaler makes it."""
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
    raise RuntimeError(f"/jsz has no stream {stream} in account {account}")


async def ensure_queue(js, namespace: str, consumer: bool) -> None:
    """The stream exactly as platform::streams::ensure_bot_jobs makes it, and (unless the
    worker makes it) the durable pull consumer the bot-workers share."""
    from nats.js.api import AckPolicy, ConsumerConfig, RetentionPolicy, StorageType, StreamConfig

    await js.add_stream(StreamConfig(
        name=bot_jobs_stream(namespace),
        subjects=[f"{namespace}.bot.jobs.>"],
        retention=RetentionPolicy.WORK_QUEUE,
        storage=StorageType.FILE,
        max_age=24 * 3600,
        duplicate_window=120,
    ))
    if not consumer:
        return
    await js.add_consumer(bot_jobs_stream(namespace), ConsumerConfig(
        durable_name=CONSUMER, ack_policy=AckPolicy.EXPLICIT, ack_wait=30,
    ))


def job(namespace: str, n: int) -> tuple[str, bytes, str]:
    """A job shaped like frontier_protocol::BotJob (a made-up game: the stand-in does not
    read it)."""
    game = str(uuid.uuid4())
    body = {"job": f"{game}:{n}", "game_id": game, "version": n, "player_id": str(uuid.uuid4()),
            "seat": "black", "level": "easy", "view": {}, "enqueued_at_ms": int(time.time() * 1000)}
    return f"{namespace}.bot.jobs.standard", json.dumps(body).encode(), body["job"]


async def stand_in_worker(nats_url: str, namespace: str, work_ms: int) -> None:
    """Takes one job at a time, spends work_ms on it, acknowledges it."""
    import nats

    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    sub = await js.pull_subscribe_bind(CONSUMER, stream=bot_jobs_stream(namespace))
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    done = 0
    while not stop.is_set():
        try:
            msgs = await sub.fetch(1, timeout=0.5)
        except asyncio.TimeoutError:
            continue
        for msg in msgs:
            await asyncio.sleep(work_ms / 1000)
            await msg.ack_sync()
            done += 1
    print(f"stand-in worker: {done} jobs done", file=sys.stderr)
    await nc.close()


class Run:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.workers: list[subprocess.Popen] = []
        self.published = 0
        self.samples: list[tuple[float, int]] = []
        self.t0 = time.monotonic()

    def start_worker(self) -> None:
        a = self.args
        env = dict(os.environ, FRONTIER_NATS_URL=a.nats_url, FRONTIER_NAMESPACE=a.namespace,
                   FRONTIER_GAME_SESSION_URL=a.game_session_url,
                   FRONTIER_ADMIN_LISTEN=f"127.0.0.1:{free_port()}")
        if a.worker_cmd:
            cmd = shlex.split(a.worker_cmd)
        else:
            cmd = [sys.executable, __file__, "--stand-in-worker", "--nats-url", a.nats_url,
                   "--namespace", a.namespace, "--work-ms", str(a.work_ms)]
        self.workers.append(subprocess.Popen(cmd, env=env))
        print(f"scaling-check: worker {len(self.workers)} started: {' '.join(cmd[:3])} …")

    async def publish(self, js, stop: asyncio.Event) -> None:
        interval = 1 / self.args.rate
        next_at = time.monotonic()
        while not stop.is_set():
            subject, body, msg_id = job(self.args.namespace, self.published + 1)
            await js.publish(subject, body, headers={"Nats-Msg-Id": msg_id})
            self.published += 1
            next_at += interval
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))

    async def lag(self) -> dict:
        a = self.args
        reading = await asyncio.to_thread(read_lag, a.monitoring, a.account, bot_jobs_stream(a.namespace), CONSUMER)
        if not reading["found"]:
            raise SystemExit(f"scaling-check: FAIL: consumer {CONSUMER} not in /jsz: KEDA would read the "
                             f"stream's last sequence ({reading['lag']}) instead")
        self.samples.append((time.monotonic() - self.t0, reading["lag"]))
        return reading

    async def consumer_made(self, js, timeout: float) -> None:
        """Waits for the worker to make its durable consumer."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                await js.consumer_info(bot_jobs_stream(self.args.namespace), CONSUMER)
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise SystemExit(f"scaling-check: FAIL: the worker made no consumer {CONSUMER}")
                await asyncio.sleep(0.1)

    async def until(self, what: str, condition, timeout: float) -> dict:
        """Reads the lag every 100 ms (KEDA: every pollingInterval) until condition holds."""
        deadline = time.monotonic() + timeout
        while True:
            reading = await self.lag()
            if condition(reading):
                return reading
            if time.monotonic() > deadline:
                raise SystemExit(f"scaling-check: FAIL: {what} not seen within {timeout:.0f} s "
                                 f"(last lag {reading['lag']}, {len(self.workers)} workers)")
            await asyncio.sleep(0.1)

    async def main(self) -> None:
        import nats

        a = self.args
        nc = await nats.connect(a.nats_url)
        js = nc.jetstream()
        await ensure_queue(js, a.namespace, consumer=not a.worker_makes_consumer)
        threshold = a.lag_threshold
        desired = lambda lag: math.ceil(lag / threshold)  # the HPA's average-value target
        print(f"scaling-check: stream {bot_jobs_stream(a.namespace)}, consumer {CONSUMER}, "
              f"lagThreshold {threshold}, {a.rate}/s arriving")
        stop = asyncio.Event()
        try:
            self.start_worker()
            if a.worker_makes_consumer:
                await self.consumer_made(js, a.timeout)
            publisher = asyncio.create_task(self.publish(js, stop))
            high = await self.until(f"lag above {threshold}", lambda r: r["lag"] > threshold, a.timeout)
            print(f"scaling-check: one worker: lag {high['lag']} (pending {high['pending']}, "
                  f"unacknowledged {high['ack_pending']}) > {threshold}: KEDA asks for {desired(high['lag'])} workers")
            self.start_worker()
            # While jobs still arrive each worker mostly holds one: the backlog (pending)
            # is what must go, and the lag fall back within one worker's share.
            low = await self.until("the backlog drained by two workers while jobs arrive",
                                   lambda r: r["pending"] == 0 and r["lag"] <= threshold, a.timeout)
            peak = max(lag for _, lag in self.samples)
            print(f"scaling-check: two workers: backlog gone while jobs still arrive (lag {low['lag']}: "
                  f"{low['ack_pending']} in the workers' hands; peak {peak}): KEDA asks for {desired(low['lag'])}")
            stop.set()
            await publisher
            end = await self.until("every job acknowledged", lambda r: r["lag"] == 0 and r["messages"] == 0, a.timeout)
            print(f"scaling-check: arrivals stopped: {self.published} jobs published, lag {end['lag']}, "
                  f"{end['messages']} left in the work queue; below activation "
                  f"({a.activation_threshold}): KEDA scales back to the minimum")
            if end["lag"] > a.activation_threshold:
                raise SystemExit("scaling-check: FAIL: lag still above the activation threshold")
        finally:
            stop.set()
            for w in self.workers:
                w.send_signal(signal.SIGTERM)
            for w in self.workers:
                try:
                    w.wait(timeout=a.timeout)
                except subprocess.TimeoutExpired:
                    w.kill()
            await nc.close()
        print("scaling-check: passed")


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
    deadline = time.monotonic() + 10
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{monitoring}/healthz?js-enabled-only=true", timeout=1)
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit("scaling-check: nats-server did not start")
            time.sleep(0.1)
    return proc, f"nats://127.0.0.1:{port}", f"127.0.0.1:{monitoring}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nats-url", help="an existing NATS (JetStream); default: a throwaway one")
    p.add_argument("--monitoring", help="its monitoring endpoint host:port (with --nats-url)")
    p.add_argument("--account", default="$G")
    p.add_argument("--namespace", default=f"scaling-{os.getpid()}", help="FRONTIER_NAMESPACE")
    p.add_argument("--worker-cmd", help="the worker to run, e.g. 'target/release/frontier bot-worker'")
    p.add_argument("--worker-makes-consumer", action="store_true",
                   help="let the worker make the durable consumer (with its own settings)")
    p.add_argument("--game-session-url", default="http://127.0.0.1:50051", help="given to the worker")
    p.add_argument("--work-ms", type=int, default=50, help="the stand-in's time per job")
    p.add_argument("--rate", type=float, default=24, help="jobs per second arriving")
    p.add_argument("--lag-threshold", type=int, default=10, help="the ScaledObject's lagThreshold")
    p.add_argument("--activation-threshold", type=int, default=0, help="its activationLagThreshold")
    p.add_argument("--timeout", type=float, default=60, help="seconds to wait for each phase")
    p.add_argument("--stand-in-worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.stand_in_worker:
        asyncio.run(stand_in_worker(args.nats_url, args.namespace, args.work_ms))
        return
    if not args.worker_cmd and not args.rate * args.work_ms / 1000 > 1 > args.rate * args.work_ms / 2000:
        raise SystemExit("scaling-check: --rate must be above one stand-in's speed and below two's")
    with tempfile.TemporaryDirectory(prefix="frontier-scaling-") as folder:
        server = None
        if not args.nats_url:
            server, args.nats_url, args.monitoring = start_nats(folder)
        elif not args.monitoring:
            raise SystemExit("scaling-check: --monitoring host:port is needed with --nats-url")
        try:
            asyncio.run(Run(args).main())
        finally:
            if server:
                server.terminate()
                server.wait(timeout=10)


if __name__ == "__main__":
    main()
