# Frontier — one entry point for building, testing and measuring.
#
#   make test    the test command: format check, clippy, every test of the workspace,
#                then the deployment checks (deploy-check, scaling-check)
#   make perft   deep perft suites in release mode (10^7–10^8 nodes a position)
#   make bench   perft and engine speed benchmarks (divan); figures go in docs/benchmarks.md
#   make load    the live path under frontier-load (release, one of each service, loopback);
#                LOAD_ARGS='…' for its flags (frontier-load --help); figures in docs/benchmarks.md
#   make load-idle  19,000 idle authenticated connections on one gateway (IDLE=N), with a
#                few games moving: the gateway's RSS per connection
#   make floor-compare  the live path side by side with ../shared/floor (the bare hops):
#                alternated runs, CPU per move and per-second p99 (FLOOR_RATES, FLOOR_REPEATS)
#   make load-idle-cost  the same connections with nothing moving: each process's CPU per
#                second per idle connection, Redis and NATS included
#   make ladder  engine level matches (self-play, SPRT, Stockfish); results in docs/benchmarks.md
#   make fuzz    60 s of cargo-fuzz on every parser of untrusted input
#   make run     every service built so far, on fixed loopback ports
#   make dev     every service in one process, nothing to install (frontier dev)
#   make rig     the multi-instance rig: two of every service, each its own process
#   make chaos   kill -9 chaos under load on the rig, checked from the records (minutes)
#   make load-clusters  the live path's moves/s on a throwaway 3-master Redis Cluster and
#                3-node NATS cluster (R3 streams), next to `make load`'s single nodes
#   make chaos-clusters  `make chaos` on throwaway clusters with replicas, Redis masters and
#                the Postgres primary among the victims (failover figures)
#   make soak    an hour at half the measured saturation: every process's memory flat, no
#                error growth, latency stable (SOAK_SECONDS, SOAK_RATE); not part of make test
#   make browser-test  the web client in a real Chromium against frontier dev, and its
#                node checks (move generator perft, translations); part of make test
#   make deploy-check  the Helm chart, k8s/ and values schema, validated offline
#   make k8s     regenerates k8s/ from the Helm chart
#   make scaling-check  the bot-job queue's lag as KEDA reads it, on a throwaway NATS, while
#                real bot-workers play real bot jobs
#   make image   the container image (where a Docker daemon runs)
#   make image-offline  the same where no image registry is reachable (local base images)

CARGO ?= cargo
FUZZ_SECONDS ?= 60
DATA := libs/rules/tests/data
PERFT := $(CARGO) run --quiet --release -p frontier-rules --bin perft --

IMAGE ?= frontier:dev
DEPLOY_PY := scripts/deploy-python.sh

.PHONY: all build test lint fmt perft bench bench-long-games load load-idle load-idle-cost floor-compare load-clusters chaos-clusters soak ladder fuzz run dev clean deploy-check k8s scaling-check image image-offline browser-test rig chaos

all: build

build:
	$(CARGO) build --workspace --all-targets

fmt:
	$(CARGO) fmt --all

lint:
	scripts/check-layering.sh
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# Tests talk to real Redis, NATS (JetStream) and Postgres: scripts/test-services.sh uses the
# ones on the standard loopback ports or starts throwaway ones (installing them if needed).
# Each integration test starts a whole platform; on a 2-core machine three at a time keep
# them responsive.
test: lint
	scripts/test-services.sh $(CARGO) test --workspace -- --test-threads=3
	python3 scripts/floor-ratios.py --self-test
	CARGO=$(CARGO) scripts/check-release-flags.sh
	$(MAKE) --no-print-directory browser-test
	$(MAKE) --no-print-directory deploy-check scaling-check

# The web client (web/app/, served by the gateway): its move generator against the perft
# data and its translations (node), then the browser scenarios in Debian's Chromium driven
# by playwright-core (web/tests/package-lock.json, installed by npm ci) against a
# `frontier dev --memory` built with the test hooks. Without node, or without Chromium,
# the browser part says SKIPPED (it never passes silently).
FRONTIER_BIN = $${CARGO_TARGET_DIR:-$(CURDIR)/target}/debug/frontier
browser-test:
	$(CARGO) build -p frontier --bin frontier --features test-hooks
	@# A fresh Debian machine: install what the browser tests drive (skipped loudly below if
	@# that fails, e.g. without root or a package mirror).
	@# Only what is missing: a machine whose node and npm come from elsewhere gets
	@# Chromium alone (asking apt for Debian's npm there fails on the conflict).
	@missing=""; command -v chromium >/dev/null || missing="chromium"; \
		{ command -v node >/dev/null && command -v npm >/dev/null; } || missing="$$missing nodejs npm"; \
		[ -z "$$missing" ] || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; } >/dev/null 2>&1 || \
		echo "*** could not install$$missing with apt-get ***"
	@if ! command -v node >/dev/null || ! command -v npm >/dev/null; then \
		echo "*** browser-test SKIPPED: node and npm are not installed (apt-get install -y nodejs npm) ***"; \
	else \
		cd web/tests && npm ci --no-audit --no-fund --loglevel=error && \
		FRONTIER_BIN="$(FRONTIER_BIN)" node --test --test-concurrency=1; \
	fi

# The deployment, offline (no cluster, no helm binary; pip installs the checkers if
# missing): lint and render the chart, validate every object against the Kubernetes API
# schemas and KEDA's model, assert what matters, k8s/ fresh, bad values refused.
deploy-check:
	$(DEPLOY_PY) deploy/check/deploy.py check

# Regenerates k8s/ (base + overlays) from the chart.
k8s:
	$(DEPLOY_PY) deploy/check/deploy.py k8s

# The signal KEDA scales bot-workers on, read from a throwaway NATS's /jsz while real
# bot-workers play real bot jobs (a real game-session on Redis: test-services.sh). The
# binary is browser-test's build (no test hook is set here).
scaling-check:
	$(CARGO) build -p frontier --bin frontier --features test-hooks
	scripts/test-services.sh $(DEPLOY_PY) deploy/check/scaling_signal.py --frontier "$(FRONTIER_BIN)"

# The image, where a Docker daemon answers; then each service's --help, and each started
# from it serving /healthz and /readyz.
image:
	scripts/build-image.sh $(IMAGE)

# The same Dockerfile where Docker runs but no image registry answers (the project's
# machines): the base images made from Debian's packages and this machine's Rust
# toolchain, the crates vendored (deploy/README.md). DOCKER=/usr/bin/docker where the
# default client lacks BuildKit.
image-offline:
	scripts/image-offline.sh $(IMAGE)

perft:
	$(PERFT) --variant standard --epd $(DATA)/standard-deep.perft
	$(PERFT) --variant standard --epd $(DATA)/standard.perft
	$(PERFT) --variant atomic --epd $(DATA)/atomic.perft
	$(PERFT) --variant atomic --epd $(DATA)/atomic-random.epd
	$(PERFT) --variant hidden --epd $(DATA)/hidden-random.epd
	$(PERFT) --variant hidden --epd $(DATA)/hidden-rules.perft

bench:
	$(CARGO) bench -p frontier-rules --bench perft
	$(CARGO) bench -p frontier-engine --bench search

# A move's cost at ply 20 and 400 in each storage format (real Redis; throwaway servers
# if none run): docs/benchmarks.md "A move of a long game".
bench-long-games:
	scripts/test-services.sh $(CARGO) bench -p frontier-game-session --bench long_games

# frontier-load against release services started by scripts/bench-live.sh (its own
# database and namespace on the test servers); the table on stdout, JSON and SVG in
# $(LOAD_OUT).
LOAD_ARGS ?= --pairs 40 --seconds 20
LOAD_OUT ?= $${CARGO_TARGET_DIR:-target}/load
RELEASE_BIN = $${CARGO_TARGET_DIR:-$(CURDIR)/target}/release
IDLE ?= 19000
load:
	$(CARGO) build --release -p frontier -p frontier-integration-tests --bin frontier --bin frontier-load
	mkdir -p $(LOAD_OUT)
	BENCH_ALL=1 scripts/test-services.sh scripts/bench-live.sh frontier $(RELEASE_BIN)/frontier -- \
		$(LOAD_ARGS) --json $(LOAD_OUT)/load.json --svg $(LOAD_OUT)/load.svg
# What an idle authenticated connection costs: IDLE connections held with no game moving;
# frontier-load's "idle cost" line: each process's CPU per second per connection (Redis
# and NATS included) from the moment they are all open to the end of the run.
load-idle-cost:
	$(CARGO) build --release -p frontier -p frontier-integration-tests --bin frontier --bin frontier-load
	scripts/test-services.sh scripts/bench-live.sh frontier $(RELEASE_BIN)/frontier 0 $$(( $(IDLE) / 400 + 70 )) -- \
		--idle $(IDLE) --idle-rate 400 --source-addrs 4 --idle-after 0

# Side by side with ../shared/floor (the bare hops of the live path, when it is there):
# both built in release, then alternated runs (floor, project, project, floor, …) at each
# of FLOOR_RATES moves/s over 1,000 games, FLOOR_REPEATS times, and the table of medians:
# CPU per move of every process and the per-second p99 (figures in docs/benchmarks.md),
# then issue 29's table (scripts/floor-ratios.py): each side's medians, the ratios and
# the targets, each said met or missed (a verdict needs three runs a side).
# FLOOR_RATES=10 gives the idle-ish case of issue 30 (CPU per second = µs per move × 10).
# The services take their settings from the environment: FRONTIER_STORAGE_FORMAT=2 and
# FRONTIER_EVENT_METADATA=payload give the forms the next release writes by default;
# FRONTIER_STORAGE_FORMAT=3 the log in the game's hash (docs/benchmarks.md, "Storage format 3").
FLOOR ?= ../shared/floor
FLOOR_RATES ?= 1000,2000
FLOOR_REPEATS ?= 3
FLOOR_TARGET ?= $${HOME:-/root}/.cache/floor-target
floor-compare:
	@test -f $(FLOOR)/bench/run.py || { echo "*** floor-compare: no $(FLOOR)/bench/run.py (the floor to compare with) ***"; exit 1; }
	$(CARGO) build --release -p frontier -p frontier-integration-tests --bin frontier --bin frontier-load
	CARGO_TARGET_DIR=$(FLOOR_TARGET) $(CARGO) build --release --manifest-path $(FLOOR)/Cargo.toml
	@work=$$(mktemp -d /tmp/floor-compare-XXXXXX); mkdir -p $$work/main; \
		ln -s $${CARGO_TARGET_DIR:-$(CURDIR)/target} $$work/main/target; \
		export CARGO_TARGET_DIR=$(FLOOR_TARGET) FRONTIER_MAIN=$$work/main FLOOR_RESULTS=$$work/results; \
		WARM=$${WARM:-8} WINDOW=$${WINDOW:-20} python3 $(FLOOR)/bench/run.py series --rates $(FLOOR_RATES) --workers 1 --repeats $(FLOOR_REPEATS) --tag compare && \
		python3 $(FLOOR)/bench/run.py table && \
		python3 scripts/floor-ratios.py $$work/results/runs.jsonl; \
		status=$$?; echo "runs kept in $$work/results/runs.jsonl"; exit $$status

load-idle:
	$(CARGO) build --release -p frontier -p frontier-integration-tests --bin frontier --bin frontier-load
	mkdir -p $(LOAD_OUT)
	scripts/test-services.sh scripts/bench-live.sh frontier $(RELEASE_BIN)/frontier -- \
		--rate 50 --games 5 --seconds 120 --idle $(IDLE) --idle-rate 400 --source-addrs 4 \
		--json $(LOAD_OUT)/idle.json --svg $(LOAD_OUT)/idle.svg

# The same as `make load`, on a throwaway Redis Cluster (3 masters) and NATS cluster (3
# nodes, R3 streams) started by frontier-clusters (libs/testkit/src/cluster.rs).
# CLUSTER_FSYNC: the masters' appendfsync (no: like the single test Redis, which keeps
# nothing on disk; always: as the cluster tests run them).
CLUSTER_FSYNC ?= no
load-clusters:
	$(CARGO) build --release -p frontier -p frontier-integration-tests --bin frontier --bin frontier-load --bin frontier-clusters
	mkdir -p $(LOAD_OUT)
	scripts/test-services.sh $(RELEASE_BIN)/frontier-clusters --appendfsync $(CLUSTER_FSYNC) -- \
		scripts/bench-live.sh frontier $(RELEASE_BIN)/frontier -- \
		$(LOAD_ARGS) --json $(LOAD_OUT)/load-clusters.json --svg $(LOAD_OUT)/load-clusters.svg

# `make chaos` on throwaway clusters the test starts itself (FRONTIER_CHAOS_CLUSTERS=1): a
# Redis Cluster of 3 masters with a replica each (--redis-ack-replicas 1), a NATS cluster of
# 3 (R3 streams), a Postgres primary with a synchronous standby behind one address. The
# monkey also kills Redis masters (every fourth kill) and, half-way, the Postgres primary
# (standby promoted); same verdict, and the failovers' figures printed. One test at a time
# (each starts its own clusters; 2 cores).
chaos-clusters:
	$(CARGO) build -p frontier --bin frontier --features test-hooks
	FRONTIER_CHAOS_CLUSTERS=1 FRONTIER_CHAOS_SECONDS=$(CHAOS_SECONDS) \
		FRONTIER_CHAOS_SCALE=$(CHAOS_SCALE) FRONTIER_CHAOS_KILL_EVERY_MS=$(CHAOS_KILL_EVERY_MS) \
		scripts/test-services.sh $(CARGO) test -p frontier-integration-tests --test chaos -- \
		--nocapture --test-threads 1

# The soak (scripts/soak.sh): one of each service from release builds, open loop at
# SOAK_RATE moves/s over SOAK_GAMES games for SOAK_SECONDS, every process's RSS sampled;
# prints and writes a verdict (target/soak/verdict.txt) and fails if a check fails.
SOAK_SECONDS ?= 3600
SOAK_RATE ?= 4000
SOAK_GAMES ?= 500
soak:
	$(CARGO) build --release -p frontier -p frontier-integration-tests --bin frontier --bin frontier-load
	scripts/test-services.sh scripts/soak.sh $(RELEASE_BIN)/frontier $(SOAK_SECONDS) $(SOAK_RATE) $(SOAK_GAMES)

# Self-play matches between the engine's levels in each variant, and Hard against
# Stockfish at its lowest UCI_Elo; not part of `make test` (it takes a while: about an hour
# on 2 busy cores). Extra arguments in LADDER_ARGS (see `ladder --help`), e.g.
# LADDER_ARGS="--jobs 2". Atomic openings are re-drawn when lost for one side (--balanced).
LADDER_ARGS ?=
LADDER := nice $(CARGO) run --quiet --release -p frontier-engine --bin ladder --
ladder:
	$(LADDER) --variant standard $(LADDER_ARGS)
	$(LADDER) --variant hidden $(LADDER_ARGS)
	$(LADDER) --variant atomic --balanced 150 $(LADDER_ARGS)
	@command -v stockfish >/dev/null || test -x /usr/games/stockfish || echo "stockfish missing: apt-get install -y stockfish"
	PATH="$$PATH:/usr/games" $(LADDER) --variant standard --pairing hard-stockfish --games 20 --no-sprt $(LADDER_ARGS)

# cargo-fuzz needs nightly-only compiler flags; RUSTC_BOOTSTRAP lets the stable compiler
# accept them. cargo-fuzz itself comes from crates.io.
fuzz:
	@command -v cargo-fuzz >/dev/null || $(CARGO) install cargo-fuzz --locked
	mkdir -p libs/rules/fuzz/corpus/parse
	cd libs/rules && RUSTC_BOOTSTRAP=1 $(CARGO) fuzz run parse fuzz/corpus/parse fuzz/seeds -- -max_total_time=$(FUZZ_SECONDS) -max_len=256

# Uses the local Redis, NATS and Postgres, or throwaway ones as the tests do.
run:
	scripts/test-services.sh scripts/run-platform.sh

# The multi-instance rig for manual and load use: RIG_INSTANCES of every service (gateways,
# game-sessions, clocks, ratings, matchmakers, bot-workers), each a separate release
# `frontier <service>` process on loopback, against the local Redis, NATS and Postgres (or
# throwaway ones). Prints the gateway addresses (for frontier-load --addr a,b); Ctrl-C
# stops everything. RIG_ARGS="--logs DIR" keeps each process's output.
RIG_INSTANCES ?= 2
RIG_ARGS ?=
rig:
	$(CARGO) build --release -p frontier -p frontier-integration-tests --bin frontier --bin frontier-rig
	scripts/test-services.sh $${CARGO_TARGET_DIR:-$(CURDIR)/target}/release/frontier-rig --instances $(RIG_INSTANCES) $(RIG_ARGS)

# Chaos under load, the long form of tests/tests/chaos.rs (which `make test` runs for 40 s):
# the rig (two of every service, debug build) loaded by clients playing, one instance of a
# random service SIGKILLed and restarted every CHAOS_KILL_EVERY_MS, then every ack, game,
# rating and ticket checked from Redis and Postgres. Prints kills per service and moves/s.
CHAOS_SECONDS ?= 180
CHAOS_SCALE ?= 2
CHAOS_KILL_EVERY_MS ?= 3000
chaos:
	$(CARGO) build -p frontier --bin frontier --features test-hooks
	FRONTIER_CHAOS_SECONDS=$(CHAOS_SECONDS) FRONTIER_CHAOS_SCALE=$(CHAOS_SCALE) \
		FRONTIER_CHAOS_KILL_EVERY_MS=$(CHAOS_KILL_EVERY_MS) \
		scripts/test-services.sh $(CARGO) test -p frontier-integration-tests --test chaos -- --nocapture

# Everything in one process, nothing to install (accounts and ratings in ./frontier-data).
dev:
	$(CARGO) run --release -p frontier --bin frontier -- dev

clean:
	$(CARGO) clean
