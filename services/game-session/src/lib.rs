//! game-session: the authority over live games.
//!
//! Any instance serves any game. A game's state lives in Redis (one key per game, with a
//! version); every change is a compare-and-set, so two instances racing on one game can
//! never both apply a change. What happened is published on NATS, one subject per audience,
//! so a hidden piece's identity only ever travels on the subject of the player entitled to
//! it; finished games go to a JetStream stream, and the jobs of bots to act to a JetStream work
//! queue, each through an outbox, so none is lost.

pub mod bus;
pub mod cache;
pub mod config;
pub mod error;
pub mod game;
pub mod grpc;
pub mod record;
pub mod rematch;
pub mod render;
pub mod service;
pub mod storage;
pub mod store;
#[cfg(any(test, feature = "test-hooks"))]
pub mod testing;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use frontier_platform::{Namespace, Shutdown};
use frontier_proto::gamesession::v1::game_session_server::GameSessionServer;
use tokio::net::TcpListener;

pub use config::Config;
pub use service::{GameService, Settings};

use crate::bus::{EventBus, NatsBus};
use crate::service::{Clock, FixedLayout, LayoutSource, RandomLayouts, SystemClock};
use crate::store::{GameStore, RedisStore};

/// game-session, built and ready: [`Service::serve`] runs it on a listener until the
/// shutdown signal. Every service crate has this shape (`build` from its configuration,
/// or `from_parts` with other adapters, then `serve`).
pub struct Service<S = RedisStore, B = NatsBus> {
    /// The game logic over its store and bus.
    pub core: Arc<GameService<S, B>>,
    /// How often finished games and bot jobs not yet acknowledged by their streams are sent
    /// again.
    pub outbox_interval: std::time::Duration,
}

/// The layouts and settings `config` asks for (test hooks included, where built): shared by
/// [`build`] and the single-process mode, which runs game-session on other adapters.
pub fn rules_of_play(
    config: &config::PlayArgs,
) -> anyhow::Result<(Arc<dyn LayoutSource>, Settings)> {
    let layouts: Arc<dyn LayoutSource> = match config.test.fixed_layout() {
        Some(layout) => {
            tracing::warn!("TEST ONLY: every hidden game uses a fixed layout");
            Arc::new(FixedLayout(
                frontier_rules::Layout::from_canonical(layout).context("test fixed layout")?,
            ))
        }
        None => Arc::new(RandomLayouts),
    };
    let minute = config
        .test
        .clock_minute()
        .unwrap_or(Duration::from_secs(60));
    if minute != Duration::from_secs(60) {
        tracing::warn!(?minute, "TEST ONLY: clock minutes are shortened");
    }
    let test_start_fens = config
        .test
        .start_fens()
        .map_err(anyhow::Error::msg)
        .context("test start position")?;
    if !test_start_fens.is_empty() {
        tracing::warn!("TEST ONLY: new boards start from a fixed position");
    }
    Ok((
        layouts,
        Settings {
            clocks: game::ClockSettings {
                ms_per_minute: minute.as_millis() as u64,
                first_move_limit_ms: config.first_move_limit.as_millis() as u64,
            },
            absence_limit: config.absence_limit,
            presence_timeout: config.presence_timeout,
            rematch_ttl: config.rematch_ttl.min(Settings::default().finished_ttl),
            state_cache: config.state_cache,
            storage_format: config.storage_format,
            #[cfg(feature = "test-hooks")]
            test_start_fens,
            ..Settings::default()
        },
    ))
}

use frontier_platform::admin::{VARIANTS, Zeroed};
/// game-session's counters, exported at zero from the start.
const ZEROED: &[Zeroed] = &[
    Zeroed::by("frontier_game_session_moves_total", "variant", VARIANTS),
    Zeroed::by(
        "frontier_game_session_boards_created_total",
        "variant",
        VARIANTS,
    ),
    Zeroed::by(
        "frontier_game_session_games_started_total",
        "variant",
        VARIANTS,
    ),
    Zeroed::by(
        "frontier_game_session_games_finished_total",
        "variant",
        VARIANTS,
    ),
    Zeroed::by(
        "frontier_game_session_bot_jobs_enqueued_total",
        "variant",
        VARIANTS,
    ),
    Zeroed::by(
        "frontier_game_session_bot_jobs_dropped_total",
        "reason",
        &["stale"],
    ),
    Zeroed::plain("frontier_game_session_cas_conflicts_total"),
    Zeroed::plain("frontier_game_session_unreplicated_writes_total"),
    Zeroed::plain("frontier_game_session_state_cache_rechecks_total"),
    Zeroed::by(
        "frontier_game_session_publish_errors_total",
        "kind",
        &["event", "finished", "bot_job", "notice"],
    ),
    Zeroed::by(
        "frontier_game_session_rematches_total",
        "event",
        &["offered", "started"],
    ),
    Zeroed::by(
        "frontier_game_session_outbox_sweep_errors_total",
        "outbox",
        &["finished", "bot_jobs"],
    ),
];
const GAUGES: &[&str] = &[];

/// Builds the service from configuration: connects to Redis and NATS.
pub async fn build(config: &Config) -> anyhow::Result<Service> {
    build_with_clock(config, Arc::new(SystemClock)).await
}

/// As [`build`], reading time from `clock`: the system clock in production; a test holds
/// a [`frontier_platform::time::ManualClock`] to say exactly how long a player thought.
pub async fn build_with_clock(config: &Config, clock: Arc<dyn Clock>) -> anyhow::Result<Service> {
    frontier_platform::admin::start_at_zero(ZEROED, GAUGES);
    frontier_platform::config::refuse_unbuilt_test_hooks(
        cfg!(feature = "test-hooks"),
        config::TEST_HOOK_VARIABLES,
    )?;
    let ns = Namespace::new(&config.namespace.namespace).map_err(anyhow::Error::msg)?;
    let store = RedisStore::new(
        config
            .redis
            .connect()
            .await
            .context("connecting to Redis")?,
        ns.clone(),
    );
    store
        .check_layout()
        .await
        .context("checking the key layout in Redis")?;
    let store = acknowledged(store, config).await?;
    let bus =
        NatsBus::connect_replicated(&config.nats.nats_url, ns, config.nats.nats_stream_replicas)
            .await
            .context("connecting to NATS")?
            .with_event_metadata(config.play.event_metadata);
    let (layouts, settings) = rules_of_play(&config.play)?;
    let core = Arc::new(GameService::new(store, bus, clock, layouts, settings));
    Ok(Service {
        core,
        outbox_interval: config.outbox_interval,
    })
}

/// The store with its writes acknowledged after `--redis-ack-replicas` replicas confirmed
/// them: as set, or (unset) 1 if every master has a replica now, else 0.
async fn acknowledged(store: RedisStore, config: &Config) -> anyhow::Result<RedisStore> {
    let (replicas, present) = match (config.redis_ack_replicas, store.replicas_per_master().await) {
        (Some(set), Ok(present)) => (set, present),
        (None, Ok(present)) => (u32::from(present > 0), present),
        (Some(set), Err(e)) => {
            tracing::warn!(error = %e, "could not count the Redis replicas");
            (set, set)
        }
        (None, Err(e)) => {
            return Err(anyhow::Error::new(e).context(
                "counting the Redis replicas (for the default of --redis-ack-replicas; set it to skip this)",
            ));
        }
    };
    // A command's own limit (`redis_conn`) must outlast the wait, or the wait is cut short
    // as a failure of the connection.
    anyhow::ensure!(
        config.redis_ack_timeout < std::time::Duration::from_secs(5),
        "--redis-ack-timeout must be below 5s (a Redis command's own limit)"
    );
    if replicas == 0 {
        tracing::info!(
            replicas_per_master = present,
            "writes acknowledged once the Redis master made them (--redis-ack-replicas 0): a failover may lose the last ones"
        );
        return Ok(store);
    }
    if present < replicas {
        tracing::warn!(
            replicas_per_master = present,
            required = replicas,
            "fewer Redis replicas than --redis-ack-replicas: writes are answered unavailable until they attach"
        );
    }
    tracing::info!(
        replicas,
        timeout = ?config.redis_ack_timeout,
        replicas_per_master = present,
        "writes acknowledged once Redis replicas confirmed them"
    );
    let mut writers = Vec::with_capacity(store::ACK_WRITERS);
    for _ in 0..store::ACK_WRITERS {
        writers.push(
            config
                .redis
                .connect()
                .await
                .context("connecting to Redis")?,
        );
    }
    Ok(store.acknowledged_by(
        store::AckReplicas {
            replicas,
            timeout: config.redis_ack_timeout,
        },
        writers,
    ))
}

impl<S: GameStore, B: EventBus> Service<S, B> {
    /// A service over these parts (other stores and buses: tests, the single-process mode).
    pub fn from_parts(core: Arc<GameService<S, B>>, outbox_interval: std::time::Duration) -> Self {
        Service {
            core,
            outbox_interval,
        }
    }

    /// Serves on `listener` (TCP, or in-process pipes: `frontier_platform::inproc`) until
    /// `shutdown`; also runs the outbox sweeper. gRPC calls in flight when the signal comes
    /// are finished first.
    pub async fn serve(
        self,
        listener: impl Into<frontier_platform::inproc::Listener>,
        shutdown: Shutdown,
    ) -> anyhow::Result<()> {
        serve(listener, self.core, self.outbox_interval, shutdown).await
    }
}

async fn serve<S: GameStore, B: EventBus>(
    listener: impl Into<frontier_platform::inproc::Listener>,
    service: Arc<GameService<S, B>>,
    outbox_interval: std::time::Duration,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let sweeper = {
        let service = service.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(outbox_interval);
            loop {
                tokio::select! {
                    _ = shutdown.wait() => break,
                    _ = tick.tick() => {
                        if let Err(e) = service.flush_outbox().await {
                            metrics::counter!("frontier_game_session_outbox_sweep_errors_total", "outbox" => "finished")
                                .increment(1);
                            tracing::warn!(error = %e, "outbox sweep failed");
                        }
                        if let Err(e) = service.flush_bot_outbox().await {
                            metrics::counter!("frontier_game_session_outbox_sweep_errors_total", "outbox" => "bot_jobs")
                                .increment(1);
                            tracing::warn!(error = %e, "bot-job outbox sweep failed");
                        }
                    }
                }
            }
        })
    };
    let incoming = listener.into().incoming();
    let result = tonic::transport::Server::builder()
        .layer(frontier_platform::admin::GrpcMetricsLayer {
            service: "game-session",
        })
        .trace_fn(frontier_platform::trace::grpc_server_span)
        .add_service(GameSessionServer::new(grpc::GrpcGameSession::new(service)))
        .serve_with_incoming_shutdown(incoming, shutdown.clone().wait_owned())
        .await;
    shutdown.trigger();
    let _ = sweeper.await;
    result.context("gRPC server")
}

/// Runs game-session from configuration until `shutdown`.
pub async fn run(config: Config, shutdown: Shutdown) -> anyhow::Result<()> {
    let service = build(&config).await?;
    frontier_platform::admin::spawn(
        config.admin.admin_listen,
        "game-session",
        frontier_platform::admin::Readiness::new()
            .redis(service.core.store().connection())
            .nats(service.core.bus().client()),
        shutdown.clone(),
    )
    .await
    .context("admin listener")?;
    let listener = TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("binding {}", config.listen))?;
    tracing::info!(addr = %listener.local_addr()?, "game-session listening");
    service.serve(listener, shutdown).await
}
