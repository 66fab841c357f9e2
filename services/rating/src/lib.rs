//! The rating service. It owns the finished games, the Glicko-2 ratings and the rating
//! history (no other service reads its tables), fills them from the JetStream stream of
//! finished games with a durable consumer, and serves them through its gRPC read API
//! (`frontier.rating.v1.Ratings`: the dashboard and PGN).
//!
//! Exactly once in effect: a game id stored before changes nothing, so a game delivered
//! twice (or redelivered after a crash between storing and the ack) is filed and rated
//! once. Storage sits behind [`RatingStore`]: [`PgStore`] (one Postgres transaction per
//! game, rating rows locked in player-id order, so concurrent games of one player on
//! several instances lose no update) and [`MemoryStore`]; both rate with the same code
//! ([`model::rate_pair`]).
//!
//! Modules: `model` (checked games, rating maths, read rows), `store` (the trait), `pg`,
//! `memory`, `queries` (the reads, transport-free), `pgn`, `grpc` (the one place errors
//! become statuses); the consumer and `run` are here.

pub mod grpc;
pub mod memory;
pub mod model;
pub mod pg;
pub mod pgn;
pub mod queries;
mod rows;
pub mod sqlite;
pub mod store;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use async_nats::jetstream::{self, consumer::pull};
use frontier_platform::config::{NamespaceArgs, NatsArgs, PostgresArgs};
use frontier_platform::time::SystemClock;
use frontier_platform::{Namespace, Shutdown};
use frontier_proto::games::v1 as games;
use futures_util::StreamExt as _;
use prost::Message as _;
use tokio::net::TcpListener;
use tracing::Instrument as _;

pub use memory::MemoryStore;
pub use model::{RecordError, Recorded};
pub use pg::{MIGRATOR, PgStore};
pub use store::RatingStore;

/// rating: finished games into Postgres, ratings exactly once.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "rating", version)]
pub struct Config {
    /// Address the gRPC read API listens on.
    #[arg(
        long,
        env = "FRONTIER_RATING_LISTEN",
        default_value = "127.0.0.1:50053"
    )]
    pub listen: SocketAddr,
    /// NATS.
    #[command(flatten)]
    pub nats: NatsArgs,
    /// Postgres.
    #[command(flatten)]
    pub postgres: PostgresArgs,
    /// Namespace.
    #[command(flatten)]
    pub namespace: NamespaceArgs,
    /// The durable consumer's name (every instance shares it, so each game goes to one).
    #[arg(long, env = "FRONTIER_RATING_CONSUMER", default_value = "rating")]
    pub consumer: String,
    /// How long a delivered game may stay unacknowledged before it is delivered again.
    #[arg(long, env = "FRONTIER_RATING_ACK_WAIT", default_value = "30s", value_parser = frontier_platform::config::parse_duration)]
    pub ack_wait: Duration,
    /// Most deliveries of one game (the first included) before the consumer gives up on it
    /// and sets it aside: it stays in the stream and is counted in
    /// `frontier_rating_set_aside_total` (an operator can replay it).
    #[arg(long, env = "FRONTIER_RATING_MAX_DELIVER", default_value_t = 100)]
    pub max_deliver: i64,
    /// First retry delay after a transient failure (Postgres unreachable); doubles per
    /// delivery up to `--retry-cap`.
    #[arg(long, env = "FRONTIER_RATING_RETRY_BASE", default_value = "1s", value_parser = frontier_platform::config::parse_duration)]
    pub retry_base: Duration,
    /// Longest retry delay.
    #[arg(long, env = "FRONTIER_RATING_RETRY_CAP", default_value = "60s", value_parser = frontier_platform::config::parse_duration)]
    pub retry_cap: Duration,
    /// Admin endpoints: `/metrics`, `/healthz`, `/readyz`.
    #[command(flatten)]
    pub admin: frontier_platform::config::AdminArgs,
    /// TEST ONLY (`test-hooks` builds): right after committing a game, before
    /// acknowledging it, print `COMMITTED <game id>` on standard output and stop (hang)
    /// there, so a test can kill the process at exactly that point.
    #[cfg(feature = "test-hooks")]
    #[arg(long, env = "FRONTIER_TEST_HANG_AFTER_COMMIT", hide = true)]
    pub test_hang_after_commit: bool,
}

/// The environment variables of the test hooks: a build without `test-hooks` refuses to
/// start when one is set.
pub const TEST_HOOK_VARIABLES: &[&str] = &["FRONTIER_TEST_HANG_AFTER_COMMIT"];

/// How to consume.
#[derive(Debug, Clone)]
pub struct ConsumerSettings {
    /// Durable consumer name.
    pub name: String,
    /// Redelivery after this long without ack.
    pub ack_wait: Duration,
    /// Most deliveries of one message before it is set aside (JetStream `max_deliver`).
    pub max_deliver: i64,
    /// First retry delay after a transient failure; doubles per delivery.
    pub retry_base: Duration,
    /// Longest retry delay.
    pub retry_cap: Duration,
    /// Replicas of the finished-games stream if this consumer creates it (3 on a NATS
    /// cluster).
    pub stream_replicas: u8,
    /// TEST ONLY (`test-hooks` builds): hang between commit and ack.
    #[cfg(feature = "test-hooks")]
    pub hang_after_commit: bool,
}

impl ConsumerSettings {
    /// The production defaults under this consumer name.
    pub fn named(name: &str) -> ConsumerSettings {
        ConsumerSettings {
            name: name.to_owned(),
            ack_wait: Duration::from_secs(30),
            max_deliver: 100,
            retry_base: Duration::from_secs(1),
            retry_cap: Duration::from_secs(60),
            stream_replicas: 1,
            #[cfg(feature = "test-hooks")]
            hang_after_commit: false,
        }
    }

    /// The delay before delivery number `delivered + 1`, after delivery `delivered` (from
    /// 1) failed transiently: `retry_base × 2^(delivered − 1)`, at most `retry_cap`.
    pub fn retry_delay(&self, delivered: i64) -> Duration {
        let doublings = u32::try_from(delivered.saturating_sub(1).clamp(0, 30)).unwrap_or(30);
        self.retry_base
            .saturating_mul(1u32 << doublings)
            .min(self.retry_cap)
    }
}

/// What the consumer did, counted since it started (also exported as metrics:
/// `frontier_rating_games_total{outcome}`, `frontier_rating_retries_total`,
/// `frontier_rating_rejected_total{reason}`, `frontier_rating_set_aside_total`).
#[derive(Debug, Default)]
pub struct ConsumerStats {
    /// Games stored (rated or not).
    pub recorded: AtomicU64,
    /// Games delivered again after they were stored (changed nothing).
    pub duplicates: AtomicU64,
    /// Messages that can never be accepted, terminated (never delivered again).
    pub rejected: AtomicU64,
    /// Transient failures, each followed by a delayed redelivery.
    pub retries: AtomicU64,
    /// Messages given up on after `max_deliver` transient failures (left in the stream).
    pub set_aside: AtomicU64,
}

impl ConsumerStats {
    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// A snapshot: (recorded, duplicates, rejected, retries, set aside).
    pub fn snapshot(&self) -> [u64; 5] {
        [
            self.recorded.load(Ordering::Relaxed),
            self.duplicates.load(Ordering::Relaxed),
            self.rejected.load(Ordering::Relaxed),
            self.retries.load(Ordering::Relaxed),
            self.set_aside.load(Ordering::Relaxed),
        ]
    }
}

/// Consumes the finished-games stream until `shutdown`; after each game it publishes a
/// notice on the recorded-games subject.
///
/// No message can stall the stream: one that cannot be decoded or will never be accepted
/// ([`RecordError::Invalid`]) is terminated (JetStream `Term`), logged once with its stream
/// sequence, and counted; a transient failure is retried with a growing delay (`Nak` with
/// delay) up to `max_deliver` deliveries, after which the message is set aside (it stays
/// in the stream; the consumer moves on) and counted.
pub async fn consume<S: RatingStore>(
    store: S,
    client: async_nats::Client,
    ns: &Namespace,
    settings: &ConsumerSettings,
    stats: Arc<ConsumerStats>,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let js = jetstream::new(client.clone());
    let consumer_name = settings.name.as_str();
    let stream =
        frontier_platform::streams::ensure_finished_games(&js, ns, settings.stream_replicas)
            .await
            .map_err(anyhow::Error::msg)?;
    let consumer = stream
        .get_or_create_consumer(
            consumer_name,
            pull::Config {
                durable_name: Some(consumer_name.to_owned()),
                ack_policy: jetstream::consumer::AckPolicy::Explicit,
                ack_wait: settings.ack_wait,
                max_deliver: settings.max_deliver,
                filter_subject: ns.finished_games_subject(),
                ..Default::default()
            },
        )
        .await
        .context("durable consumer")?;
    // Pull requests of 5 s with a 1 s idle heartbeat: a request lost with its NATS server
    // (killed, or the consumer's leader moving) is noticed within 2 s and made again. The
    // client's defaults (30 s, 15 s) left finished games unrecorded for up to 30 s after a
    // server of a cluster died (seen in tests/tests/cluster.rs). One request per 5 s idle.
    let mut messages = consumer
        .stream()
        .expires(Duration::from_secs(5))
        .heartbeat(Duration::from_secs(1))
        .messages()
        .await
        .context("pull messages")?;
    // The consumer's lag (pending + awaiting ack), the figure KEDA scales on, as a gauge.
    let mut lag_probe = consumer.clone();
    let mut lag_tick = tokio::time::interval(Duration::from_secs(5));
    lag_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let next = tokio::select! {
            _ = shutdown.wait() => return Ok(()),
            _ = lag_tick.tick() => {
                if let Ok(info) = lag_probe.info().await {
                    let lag = info.num_pending + info.num_ack_pending as u64;
                    metrics::gauge!("frontier_rating_consumer_lag").set(lag as f64);
                }
                continue;
            }
            m = messages.next() => m,
        };
        let Some(message) = next else {
            return Ok(());
        };
        let message = match message {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(error = %e, "receiving a finished game failed");
                continue;
            }
        };
        let span = record_span(&message);
        handle(&store, &client, ns, settings, &stats, message)
            .instrument(span)
            .await;
    }
}

/// The stream sequence and delivery count of a message (0 when unknown).
fn delivery(message: &jetstream::Message) -> (u64, i64) {
    message
        .info()
        .map(|i| (i.stream_sequence, i.delivered))
        .unwrap_or((0, 0))
}

/// The span of recording one delivered game: a child of the span that published it
/// (game-session's, from the message headers), so the game's trace runs from the call that
/// finished it to its recording. The game id is filled in once the record is decoded.
fn record_span(message: &jetstream::Message) -> tracing::Span {
    let (sequence, delivered) = delivery(message);
    let span = tracing::info_span!(
        "rating.record",
        sequence,
        delivered,
        game = tracing::field::Empty
    );
    frontier_platform::trace::adopt(
        span,
        &frontier_platform::trace::extract_headers(message.headers.as_ref()),
    )
}

fn reject(stats: &ConsumerStats, reason: &'static str) {
    ConsumerStats::bump(&stats.rejected);
    metrics::counter!("frontier_rating_rejected_total", "reason" => reason).increment(1);
}

async fn handle<S: RatingStore>(
    store: &S,
    client: &async_nats::Client,
    ns: &Namespace,
    settings: &ConsumerSettings,
    stats: &ConsumerStats,
    message: jetstream::Message,
) {
    let (sequence, delivered) = delivery(&message);
    let game = match games::FinishedGame::decode(message.payload.as_ref()) {
        Ok(g) => g,
        Err(e) => {
            tracing::error!(sequence, error = %e, "terminating an undecodable finished-game message");
            reject(stats, "undecodable");
            let _ = message.ack_with(jetstream::AckKind::Term).await;
            return;
        }
    };
    tracing::Span::current().record("game", game.game_id.as_str());
    match store.record_game(&game).await {
        Ok(recorded) => {
            match recorded {
                Recorded::Stored { rated } => {
                    ConsumerStats::bump(&stats.recorded);
                    let outcome = if rated { "rated" } else { "stored" };
                    metrics::counter!("frontier_rating_games_total", "outcome" => outcome)
                        .increment(1);
                }
                Recorded::Duplicate => {
                    ConsumerStats::bump(&stats.duplicates);
                    metrics::counter!("frontier_rating_games_total", "outcome" => "duplicate")
                        .increment(1);
                }
            }
            tracing::info!(game = %game.game_id, ?recorded, "finished game recorded");
            #[cfg(feature = "test-hooks")]
            if settings.hang_after_commit {
                announce_commit(&game.game_id);
                tracing::warn!("TEST ONLY: hanging between commit and acknowledgement");
                std::future::pending::<()>().await;
            }
            if let Err(e) = message.double_ack().await {
                tracing::warn!(error = %e, "ack failed; the game will come again and change nothing");
            }
            let notice = serde_json::json!({
                "game_id": game.game_id,
                "rated": matches!(recorded, Recorded::Stored { rated: true }),
                "duplicate": recorded == Recorded::Duplicate,
            });
            let _ = client
                .publish(ns.recorded_games_subject(), notice.to_string().into())
                .await;
        }
        Err(RecordError::Invalid(why)) => {
            // Logged once: a terminated message is never delivered again.
            tracing::error!(sequence, game = %game.game_id, %why, "terminating a finished game that can never be recorded");
            reject(stats, "invalid");
            let _ = message.ack_with(jetstream::AckKind::Term).await;
        }
        Err(RecordError::Storage(e)) => {
            if delivered >= settings.max_deliver {
                // JetStream delivers it no more; it stays in the stream for an operator.
                tracing::error!(sequence, game = %game.game_id, delivered, error = %e,
                    "giving up on a finished game after its last delivery; it stays in the stream, set aside");
                ConsumerStats::bump(&stats.set_aside);
                metrics::counter!("frontier_rating_set_aside_total").increment(1);
                let _ = message.ack_with(jetstream::AckKind::Term).await;
                return;
            }
            let delay = settings.retry_delay(delivered);
            tracing::warn!(sequence, game = %game.game_id, delivered, ?delay, error = %e,
                "recording a finished game failed; retrying later");
            ConsumerStats::bump(&stats.retries);
            metrics::counter!("frontier_rating_retries_total").increment(1);
            let _ = message.ack_with(jetstream::AckKind::Nak(Some(delay))).await;
        }
    }
}

/// Records finished games handed over in process (the single-process mode: game-session's
/// in-memory bus feeds `games`), the same way [`consume`] records them from JetStream: an
/// undecodable or invalid record is set aside (logged, counted), a storage failure is
/// retried with a doubling delay up to `settings.max_deliver` attempts, then set aside.
/// Ends with `shutdown` or when every sender is gone.
pub async fn consume_local<S: RatingStore>(
    store: S,
    mut games: tokio::sync::mpsc::UnboundedReceiver<bytes::Bytes>,
    settings: ConsumerSettings,
    stats: Arc<ConsumerStats>,
    shutdown: Shutdown,
) {
    loop {
        let record = tokio::select! {
            _ = shutdown.wait() => return,
            r = games.recv() => match r {
                Some(r) => r,
                None => return,
            },
        };
        let game = match games::FinishedGame::decode(record.as_ref()) {
            Ok(g) => g,
            Err(e) => {
                tracing::error!(error = %e, "setting aside an undecodable finished game");
                reject(&stats, "undecodable");
                continue;
            }
        };
        let mut attempt: i64 = 1;
        loop {
            match store.record_game(&game).await {
                Ok(recorded) => {
                    let bump = if recorded == Recorded::Duplicate {
                        &stats.duplicates
                    } else {
                        &stats.recorded
                    };
                    ConsumerStats::bump(bump);
                    tracing::info!(game = %game.game_id, ?recorded, "finished game recorded");
                    break;
                }
                Err(RecordError::Invalid(why)) => {
                    tracing::error!(game = %game.game_id, %why, "setting aside a finished game that can never be recorded");
                    reject(&stats, "invalid");
                    break;
                }
                Err(RecordError::Storage(e)) if attempt < settings.max_deliver => {
                    let delay = settings.retry_delay(attempt);
                    tracing::warn!(game = %game.game_id, attempt, ?delay, error = %e, "recording a finished game failed; retrying");
                    ConsumerStats::bump(&stats.retries);
                    attempt += 1;
                    tokio::select! {
                        _ = shutdown.wait() => return,
                        _ = tokio::time::sleep(delay) => {}
                    }
                }
                Err(RecordError::Storage(e)) => {
                    tracing::error!(game = %game.game_id, error = %e, "setting aside a finished game after repeated storage failures");
                    ConsumerStats::bump(&stats.set_aside);
                    break;
                }
            }
        }
    }
}

/// Serves the read API (`grpc::RatingsService`) on `listener` until `shutdown`.
pub async fn serve_api<S: RatingStore>(
    listener: impl Into<frontier_platform::inproc::Listener>,
    service: grpc::RatingsService<S>,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let incoming = listener.into().incoming();
    tonic::transport::Server::builder()
        .layer(frontier_platform::admin::GrpcMetricsLayer { service: "rating" })
        .trace_fn(frontier_platform::trace::grpc_server_span)
        .add_service(service.into_server())
        .serve_with_incoming_shutdown(incoming, shutdown.wait_owned())
        .await
        .context("gRPC server")
}

/// Runs the rating service from configuration until `shutdown`: the consumer and the read
/// API, both on Postgres. If either stops with an error, the other is stopped too.
pub async fn run(config: Config, shutdown: Shutdown) -> anyhow::Result<()> {
    let service = build(&config).await?;
    frontier_platform::admin::spawn(
        config.admin.admin_listen,
        "rating",
        service.readiness.clone(),
        shutdown.clone(),
    )
    .await
    .context("admin listener")?;
    let listener = TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("binding {}", config.listen))?;
    tracing::info!(addr = %listener.local_addr()?, "rating read API listening");
    service.serve(listener, shutdown).await
}

/// The rating service, built and ready: [`Service::serve`] runs its read API on a listener
/// and its consumer of finished games until the shutdown signal. Every service crate has
/// this shape (`build` from its configuration, or `from_parts`, then `serve`).
pub struct Service<S = PgStore> {
    store: S,
    nats: async_nats::Client,
    ns: Namespace,
    settings: ConsumerSettings,
    stats: Arc<ConsumerStats>,
    clock: Arc<dyn frontier_platform::time::Clock>,
    /// What `/readyz` checks.
    pub readiness: frontier_platform::admin::Readiness,
}

use frontier_platform::admin::Zeroed;
/// The rating service's counters and gauges, exported at zero from the start.
const ZEROED: &[Zeroed] = &[
    Zeroed::by(
        "frontier_rating_games_total",
        "outcome",
        &["stored", "rated", "duplicate"],
    ),
    Zeroed::plain("frontier_rating_set_aside_total"),
    Zeroed::plain("frontier_rating_retries_total"),
    Zeroed::by(
        "frontier_rating_rejected_total",
        "reason",
        &["undecodable", "invalid"],
    ),
];
const GAUGES: &[&str] = &["frontier_rating_consumer_lag"];

/// Builds the service from configuration: connects to Postgres (and applies rating's own
/// migrations) and NATS.
pub async fn build(config: &Config) -> anyhow::Result<Service> {
    frontier_platform::admin::start_at_zero(ZEROED, GAUGES);
    frontier_platform::config::refuse_unbuilt_test_hooks(
        cfg!(feature = "test-hooks"),
        TEST_HOOK_VARIABLES,
    )?;
    let ns = Namespace::new(&config.namespace.namespace).map_err(anyhow::Error::msg)?;
    let pool = config
        .postgres
        .pool(8)
        .await
        .context("connecting to Postgres")?;
    MIGRATOR.run(&pool).await.context("applying migrations")?;
    let nats = frontier_platform::streams::connect(&config.nats.nats_url)
        .await
        .map_err(anyhow::Error::msg)?;
    let settings = ConsumerSettings {
        stream_replicas: config.nats.nats_stream_replicas,
        name: config.consumer.clone(),
        ack_wait: config.ack_wait,
        max_deliver: config.max_deliver,
        retry_base: config.retry_base,
        retry_cap: config.retry_cap,
        #[cfg(feature = "test-hooks")]
        hang_after_commit: config.test_hang_after_commit,
    };
    let readiness = frontier_platform::admin::Readiness::new()
        .postgres(pool.clone())
        .nats(nats.clone());
    Ok(Service {
        readiness,
        ..Service::from_parts(PgStore::new(pool), nats, ns, settings)
    })
}

impl<S: RatingStore> Service<S> {
    /// A service over this store (the in-memory one: tests, the single-process mode).
    pub fn from_parts(
        store: S,
        nats: async_nats::Client,
        ns: Namespace,
        settings: ConsumerSettings,
    ) -> Self {
        Service {
            readiness: frontier_platform::admin::Readiness::new().nats(nats.clone()),
            store,
            nats,
            ns,
            settings,
            stats: Arc::default(),
            clock: Arc::new(SystemClock),
        }
    }

    /// Serves the read API on `listener` and consumes finished games until `shutdown`;
    /// whichever of the two ends first (shutdown or a failure) stops the other.
    pub async fn serve(self, listener: TcpListener, shutdown: Shutdown) -> anyhow::Result<()> {
        let api_service = grpc::RatingsService::new(self.store.clone(), self.clock.clone());
        let mut api = tokio::spawn(serve_api(listener, api_service, shutdown.clone()));
        tracing::info!("rating consuming finished games");
        let consumer = consume(
            self.store,
            self.nats,
            &self.ns,
            &self.settings,
            self.stats,
            shutdown.clone(),
        );
        tokio::pin!(consumer);
        let (consumed, served) = tokio::select! {
            consumed = &mut consumer => {
                shutdown.trigger();
                (consumed, (&mut api).await)
            }
            served = &mut api => {
                shutdown.trigger();
                (consumer.await, served)
            }
        };
        consumed.and(served.context("read API task")?)
    }
}

/// TEST ONLY: tells a waiting test the commit happened (see `test_hang_after_commit`).
#[cfg(feature = "test-hooks")]
fn announce_commit(game_id: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "COMMITTED {game_id}");
    let _ = out.flush();
}
