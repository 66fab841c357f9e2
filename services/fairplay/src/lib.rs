//! The fair-play service. It screens finished rated games for engine use: a durable
//! JetStream consumer of its own (`fairplay`, on the finished-games stream, shared by every
//! instance) hands each rated game between two registered people to the analysis core
//! (`frontier_fairplay`: the project's engine at a fixed node budget, hidden chess from
//! each mover's own view), stores each player's result, aggregates the player's latest
//! games per variant with their rating as context, and opens or updates a report in the
//! moderation queue when the thresholds are crossed. Moderators read and decide reports
//! through the gRPC API (`frontier.fairplay.v1.FairPlay`, behind the gateway's moderator
//! endpoints); the gateway asks it whether a player is marked.
//!
//! Off the live path: the analysis runs after the game, on blocking threads
//! (`--concurrency` at once, one pulled game per free slot, so a busy worker holds no game
//! another could take); its workers scale on the consumer's lag (KEDA), like bot-workers.
//!
//! Exactly once in effect: a player's game stored before changes nothing, so a game
//! delivered twice is counted once. No message stalls the consumer: an undecodable record
//! or one whose moves do not replay is terminated, logged once and counted; a storage
//! failure is retried with a doubling delay, and set aside after `--max-deliver`.
//!
//! Modules: `model` (the stored shapes and the report rule), `intake` (which records are
//! analysed; record → analysis input → stored sides), `store` (the trait), `pg`, `memory`,
//! `grpc` (the one place errors become statuses); the consumer and `run` are here.

pub mod grpc;
pub mod intake;
pub mod memory;
pub mod model;
pub mod pg;
pub mod store;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use async_nats::jetstream::{self, AckKind, consumer::PullConsumer, consumer::pull};
use frontier_fairplay::{Settings, Thresholds};
use frontier_platform::config::{NamespaceArgs, NatsArgs, PostgresArgs};
use frontier_platform::convert::variant_to_proto;
use frontier_platform::time::{Clock, SystemClock};
use frontier_platform::{Namespace, Shutdown};
use frontier_proto::games::v1 as games;
use frontier_proto::rating::v1 as rating_pb;
use frontier_rules::{ByColor, Variant};
use futures_util::StreamExt as _;
use prost::Message as _;
use tokio::net::TcpListener;
use tracing::Instrument as _;
use uuid::Uuid;

pub use memory::MemoryStore;
pub use pg::{MIGRATOR, PgStore};
pub use store::FairPlayStore;

/// fairplay: finished rated games screened for engine use; the moderation queue.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "fairplay", version)]
pub struct Config {
    /// Address the gRPC API listens on.
    #[arg(
        long,
        env = "FRONTIER_FAIRPLAY_LISTEN",
        default_value = "127.0.0.1:50055"
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
    /// The durable consumer's name (every instance shares it, so each game goes to one;
    /// KEDA reads this consumer's lag).
    #[arg(long, env = "FRONTIER_FAIRPLAY_CONSUMER", default_value = "fairplay")]
    pub consumer: String,
    /// Games analysed at once (each on a blocking thread); default: the machine's cores.
    #[arg(long, env = "FRONTIER_FAIRPLAY_CONCURRENCY")]
    pub concurrency: Option<usize>,
    /// The engine's node budget per analysed move (deterministic: the same game always
    /// analyses the same).
    #[arg(long, env = "FRONTIER_FAIRPLAY_NODES", default_value_t = Settings::default().nodes)]
    pub nodes: u64,
    /// The rating service, for each player's rating as the aggregate's context (without
    /// it every player counts as rated 1500).
    #[arg(long, env = "FRONTIER_RATING_URL")]
    pub rating_url: Option<String>,
    /// How long a delivered game may stay unacknowledged (the analysis reports progress
    /// every third of it) before it is delivered again.
    #[arg(long, env = "FRONTIER_FAIRPLAY_ACK_WAIT", default_value = "30s", value_parser = frontier_platform::config::parse_duration)]
    pub ack_wait: Duration,
    /// Most deliveries of one game before it is set aside (left in the stream, counted in
    /// `frontier_fairplay_set_aside_total`).
    #[arg(long, env = "FRONTIER_FAIRPLAY_MAX_DELIVER", default_value_t = 20)]
    pub max_deliver: i64,
    /// Admin endpoints: `/metrics`, `/healthz`, `/readyz`.
    #[command(flatten)]
    pub admin: frontier_platform::config::AdminArgs,
}

/// How to consume.
#[derive(Debug, Clone)]
pub struct ConsumerSettings {
    /// Durable consumer name.
    pub name: String,
    /// Redelivery after this long without ack or progress.
    pub ack_wait: Duration,
    /// Most deliveries of one message before it is set aside.
    pub max_deliver: i64,
    /// First retry delay after a transient failure; doubles per delivery.
    pub retry_base: Duration,
    /// Longest retry delay.
    pub retry_cap: Duration,
    /// Games analysed at once.
    pub concurrency: usize,
    /// Replicas of the finished-games stream if this consumer creates it.
    pub stream_replicas: u8,
}

impl ConsumerSettings {
    /// The production defaults under this consumer name.
    pub fn named(name: &str) -> ConsumerSettings {
        ConsumerSettings {
            name: name.to_owned(),
            ack_wait: Duration::from_secs(30),
            max_deliver: 20,
            retry_base: Duration::from_secs(1),
            retry_cap: Duration::from_secs(60),
            concurrency: default_concurrency(),
            stream_replicas: 1,
        }
    }

    /// `retry_base × 2^(delivered − 1)`, at most `retry_cap`.
    pub fn retry_delay(&self, delivered: i64) -> Duration {
        let doublings = u32::try_from(delivered.saturating_sub(1).clamp(0, 30)).unwrap_or(30);
        self.retry_base
            .saturating_mul(1u32 << doublings)
            .min(self.retry_cap)
    }
}

fn default_concurrency() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// What the consumer did since it started (also exported as metrics).
#[derive(Debug, Default)]
pub struct ConsumerStats {
    /// Games analysed and stored.
    pub analysed: AtomicU64,
    /// Games not analysed (casual, aborted, not between two people) or delivered again.
    pub skipped: AtomicU64,
    /// Messages terminated: never acceptable.
    pub rejected: AtomicU64,
    /// Transient failures, each followed by a delayed redelivery.
    pub retries: AtomicU64,
    /// Messages given up on after `max_deliver` deliveries.
    pub set_aside: AtomicU64,
    /// Reports opened.
    pub reports: AtomicU64,
    /// Messages settled (acknowledged, terminated, set aside or put back for a retry).
    pub settled: AtomicU64,
    settled_changed: tokio::sync::Notify,
}

impl ConsumerStats {
    fn bump(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    fn settle(&self) {
        self.settled.fetch_add(1, Ordering::Relaxed);
        self.settled_changed.notify_waiters();
    }

    /// Waits until at least `n` messages were settled since the consumer started.
    pub async fn wait_settled(&self, n: u64) {
        loop {
            let changed = self.settled_changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.settled.load(Ordering::Relaxed) >= n {
                return;
            }
            changed.await;
        }
    }

    /// A snapshot: (analysed, skipped, rejected, retries, set aside, reports).
    pub fn snapshot(&self) -> [u64; 6] {
        [
            self.analysed.load(Ordering::Relaxed),
            self.skipped.load(Ordering::Relaxed),
            self.rejected.load(Ordering::Relaxed),
            self.retries.load(Ordering::Relaxed),
            self.set_aside.load(Ordering::Relaxed),
            self.reports.load(Ordering::Relaxed),
        ]
    }
}

/// Each player's rating in a variant: from the rating service, or 1500 without one.
#[derive(Clone, Default)]
pub struct RatingSource {
    client: Option<rating_pb::ratings_client::RatingsClient<tonic::transport::Channel>>,
}

/// The rating the aggregate assumes without a rating service.
pub const DEFAULT_RATING: f64 = 1500.0;

impl RatingSource {
    /// Asks the rating service at `url` (connected lazily).
    pub fn connect(url: &str) -> Result<RatingSource, String> {
        Ok(RatingSource {
            client: Some(rating_pb::ratings_client::RatingsClient::new(
                frontier_proto::rating_channel(url)?,
            )),
        })
    }

    /// Over an existing channel (the single-process mode's in-memory pipe).
    pub fn over(channel: tonic::transport::Channel) -> RatingSource {
        RatingSource {
            client: Some(rating_pb::ratings_client::RatingsClient::new(channel)),
        }
    }

    /// A player's rating in `variant`; an error is transient (the call failed).
    pub async fn rating(&self, player: Uuid, variant: Variant) -> Result<f64, String> {
        let Some(mut client) = self.client.clone() else {
            return Ok(DEFAULT_RATING);
        };
        let reply = client
            .get_player(rating_pb::GetPlayerRequest {
                player_id: player.to_string(),
            })
            .await
            .map_err(|s| format!("rating service: {}", s.message()))?
            .into_inner();
        let wanted = variant_to_proto(variant) as i32;
        Ok(reply
            .ratings
            .iter()
            .find(|r| r.variant == wanted)
            .map_or(DEFAULT_RATING, |r| r.rating))
    }
}

/// What analysing needs besides the store: the core's settings, the thresholds (held by
/// the store), the ratings and the clock.
#[derive(Clone)]
pub struct Analyser {
    /// The analysis settings (node budget, skipped plies, margins).
    pub settings: Settings,
    /// Ratings as context.
    pub ratings: RatingSource,
    /// "Now" for stored rows.
    pub clock: Arc<dyn Clock>,
}

/// How one delivered record ended.
enum Handled {
    /// Analysed and stored (or stored before): acknowledge.
    Done,
    /// Never acceptable: terminate.
    Rejected,
    /// Failed for now: retry later.
    Transient(String),
}

/// A seed per game, so the same game always analyses the same.
fn seed_of(game: Uuid) -> u64 {
    let (hi, lo) = game.as_u64_pair();
    hi ^ lo.rotate_left(29)
}

/// Decodes, analyses and stores one record. `progress` is called while the analysis runs
/// (every `every`), so a long analysis is not taken for a dead worker.
async fn process<S: FairPlayStore, P, F>(
    store: &S,
    analyser: &Analyser,
    stats: &ConsumerStats,
    payload: &[u8],
    every: Duration,
    mut progress: P,
) -> Handled
where
    P: FnMut() -> F,
    F: std::future::Future<Output = ()>,
{
    let record = match games::FinishedGame::decode(payload) {
        Ok(g) => g,
        Err(e) => {
            tracing::error!(error = %e, "terminating an undecodable finished-game record");
            reject(stats, "undecodable");
            return Handled::Rejected;
        }
    };
    tracing::Span::current().record("game", record.game_id.as_str());
    let game = match intake::eligible(&record) {
        Err(why) => {
            tracing::error!(game = %record.game_id, %why, "terminating a record fair play can never analyse");
            reject(stats, "invalid");
            return Handled::Rejected;
        }
        Ok(Err(skip)) => {
            ConsumerStats::bump(&stats.skipped, 1);
            metrics::counter!("frontier_fairplay_games_total", "variant" => variant_label(&record), "outcome" => "skipped")
                .increment(1);
            tracing::debug!(game = %record.game_id, reason = skip.as_str(), "not screened");
            return Handled::Done;
        }
        Ok(Ok(game)) => Arc::new(game),
    };
    let variant = game.variant();
    let mut ratings = ByColor {
        white: DEFAULT_RATING,
        black: DEFAULT_RATING,
    };
    for color in [frontier_rules::Color::White, frontier_rules::Color::Black] {
        match analyser
            .ratings
            .rating(game.players.get(color).0, variant)
            .await
        {
            Ok(r) => *ratings.get_mut(color) = r,
            Err(e) => return Handled::Transient(e),
        }
    }
    let mut settings = analyser.settings;
    settings.seed = seed_of(game.game_id);
    let started = Instant::now();
    let task = {
        let game = game.clone();
        tokio::task::spawn_blocking(move || intake::analyse(&game, &settings))
    };
    tokio::pin!(task);
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    let analysis = loop {
        tokio::select! {
            done = &mut task => break done,
            _ = ticker.tick() => progress().await,
        }
    };
    let analysis = match analysis {
        Ok(Ok(a)) => a,
        Ok(Err(why)) => {
            tracing::error!(game = %game.game_id, %why, "terminating a record whose moves do not analyse");
            reject(stats, "invalid");
            return Handled::Rejected;
        }
        Err(e) => return Handled::Transient(format!("analysis task: {e}")),
    };
    let elapsed = started.elapsed();
    let sides = intake::sides(&game, &analysis, ratings);
    match store.record(&sides, analyser.clock.now_ms()).await {
        Ok(recorded) => {
            let label = variant_name(variant);
            if recorded.stored == 0 {
                ConsumerStats::bump(&stats.skipped, 1);
                metrics::counter!("frontier_fairplay_games_total", "variant" => label, "outcome" => "duplicate")
                    .increment(1);
            } else {
                ConsumerStats::bump(&stats.analysed, 1);
                metrics::counter!("frontier_fairplay_games_total", "variant" => label, "outcome" => "analysed")
                    .increment(1);
                metrics::histogram!("frontier_fairplay_analysis_seconds", "variant" => label)
                    .record(elapsed.as_secs_f64());
            }
            if !recorded.opened.is_empty() {
                ConsumerStats::bump(&stats.reports, recorded.opened.len() as u64);
                metrics::counter!("frontier_fairplay_reports_total", "variant" => label)
                    .increment(recorded.opened.len() as u64);
                tracing::info!(game = %game.game_id, reports = ?recorded.opened, "fair-play report opened");
            }
            tracing::info!(game = %game.game_id, stored = recorded.stored, ms = elapsed.as_millis() as u64, "game screened");
            Handled::Done
        }
        Err(e) => Handled::Transient(e.to_string()),
    }
}

fn variant_name(v: Variant) -> &'static str {
    match v {
        Variant::Standard => "standard",
        Variant::Hidden => "hidden",
        Variant::Atomic => "atomic",
    }
}

fn variant_label(record: &games::FinishedGame) -> &'static str {
    frontier_platform::convert::variant_from_proto(record.variant).map_or("unknown", variant_name)
}

fn reject(stats: &ConsumerStats, reason: &'static str) {
    ConsumerStats::bump(&stats.rejected, 1);
    metrics::counter!("frontier_fairplay_rejected_total", "reason" => reason).increment(1);
}

/// The stream sequence and delivery count of a message (0 when unknown).
fn delivery(message: &jetstream::Message) -> (u64, i64) {
    message
        .info()
        .map(|i| (i.stream_sequence, i.delivered))
        .unwrap_or((0, 0))
}

async fn handle<S: FairPlayStore>(
    store: S,
    analyser: Analyser,
    settings: Arc<ConsumerSettings>,
    stats: Arc<ConsumerStats>,
    message: jetstream::Message,
) {
    let every = (settings.ack_wait / 3).max(Duration::from_millis(100));
    let handled = process(
        &store,
        &analyser,
        &stats,
        &message.payload,
        every,
        || async {
            let _ = message.ack_with(AckKind::Progress).await;
        },
    )
    .await;
    answer(&message, handled, &settings, &stats).await;
    stats.settle();
}

/// Tells JetStream how a delivered game ended: ack, term, or nak with a delay (set aside
/// after the last delivery).
async fn answer(
    message: &jetstream::Message,
    handled: Handled,
    settings: &ConsumerSettings,
    stats: &ConsumerStats,
) {
    let (sequence, delivered) = delivery(message);
    match handled {
        Handled::Done => {
            if let Err(e) = message.double_ack().await {
                tracing::warn!(sequence, error = %e, "ack failed; the game will come again and change nothing");
            }
        }
        Handled::Rejected => {
            let _ = message.double_ack_with(AckKind::Term).await;
        }
        Handled::Transient(e) => {
            if delivered >= settings.max_deliver {
                tracing::error!(sequence, delivered, error = %e,
                    "giving up on a finished game after its last delivery; it stays in the stream, set aside");
                ConsumerStats::bump(&stats.set_aside, 1);
                metrics::counter!("frontier_fairplay_set_aside_total").increment(1);
                let _ = message.double_ack_with(AckKind::Term).await;
                return;
            }
            let delay = settings.retry_delay(delivered);
            tracing::warn!(sequence, delivered, ?delay, error = %e, "screening a finished game failed; retrying later");
            ConsumerStats::bump(&stats.retries, 1);
            metrics::counter!("frontier_fairplay_retries_total").increment(1);
            let _ = message.double_ack_with(AckKind::Nak(Some(delay))).await;
        }
    }
}

/// How long one pull request waits for a game.
const PULL_WAIT: Duration = Duration::from_secs(5);

/// Creates (or updates to these settings) the durable consumer on the finished-games
/// stream.
pub async fn consumer(
    client: &async_nats::Client,
    ns: &Namespace,
    settings: &ConsumerSettings,
) -> anyhow::Result<PullConsumer> {
    let js = jetstream::new(client.clone());
    let stream =
        frontier_platform::streams::ensure_finished_games(&js, ns, settings.stream_replicas)
            .await
            .map_err(anyhow::Error::msg)?;
    let config = pull::Config {
        durable_name: Some(settings.name.clone()),
        ack_policy: jetstream::consumer::AckPolicy::Explicit,
        ack_wait: settings.ack_wait,
        max_deliver: settings.max_deliver,
        filter_subject: ns.finished_games_subject(),
        ..Default::default()
    };
    stream
        .create_consumer(config)
        .await
        .with_context(|| format!("durable consumer {}", settings.name))
}

/// Consumes the finished-games stream until `shutdown`: one pull request per free slot
/// (so games this worker has no room for stay with the server for the others), each game
/// screened on its own task; at shutdown it stops pulling and finishes the games in hand.
pub async fn consume<S: FairPlayStore>(
    store: S,
    client: async_nats::Client,
    ns: Namespace,
    settings: ConsumerSettings,
    analyser: Analyser,
    stats: Arc<ConsumerStats>,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let consumer = consumer(&client, &ns, &settings).await?;
    let settings = Arc::new(settings);
    let slots = Arc::new(tokio::sync::Semaphore::new(settings.concurrency.max(1)));
    tokio::spawn(watch_gauges(
        consumer.clone(),
        store.clone(),
        shutdown.clone(),
    ));
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        let permit = tokio::select! {
            _ = shutdown.wait() => break,
            p = slots.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        while tasks.try_join_next().is_some() {}
        let message = tokio::select! {
            _ = shutdown.wait() => break,
            m = pull_one(&consumer) => m,
        };
        let Some(message) = message else {
            continue;
        };
        let (sequence, delivered) = delivery(&message);
        let span = tracing::info_span!(
            "fairplay.screen",
            sequence,
            delivered,
            game = tracing::field::Empty
        );
        let span = frontier_platform::trace::adopt(
            span,
            &frontier_platform::trace::extract_headers(message.headers.as_ref()),
        );
        let task = handle(
            store.clone(),
            analyser.clone(),
            settings.clone(),
            stats.clone(),
            message,
        );
        tasks.spawn(
            async move {
                task.await;
                drop(permit);
            }
            .instrument(span),
        );
    }
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// One game from one pull request (none when the request ran out or failed).
async fn pull_one(consumer: &PullConsumer) -> Option<jetstream::Message> {
    let request = consumer
        .batch()
        .max_messages(1)
        .expires(PULL_WAIT)
        .messages()
        .await;
    let mut batch = match request {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(error = %e, "pulling a finished game failed");
            tokio::time::sleep(Duration::from_millis(500)).await;
            return None;
        }
    };
    match tokio::time::timeout(PULL_WAIT * 2, batch.next()).await {
        Ok(Some(Ok(message))) => Some(message),
        Ok(Some(Err(e))) => {
            tracing::warn!(error = %e, "pulling a finished game failed");
            None
        }
        Ok(None) | Err(_) => None,
    }
}

/// Every 5 s: the consumer's lag (pending + awaiting ack, the figure KEDA scales on) and
/// the open reports, as gauges.
async fn watch_gauges<S: FairPlayStore>(mut consumer: PullConsumer, store: S, shutdown: Shutdown) {
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.wait() => return,
            _ = tick.tick() => {}
        }
        if let Ok(info) = consumer.info().await {
            let lag = info.num_pending + info.num_ack_pending as u64;
            metrics::gauge!("frontier_fairplay_backlog").set(lag as f64);
        }
        if let Ok(open) = store.open_reports().await {
            metrics::gauge!("frontier_fairplay_reports_open").set(open as f64);
        }
    }
}

/// Screens finished games handed over in process (`frontier dev`: game-session's
/// in-memory bus), the same way [`consume`] does from JetStream, one at a time; a storage
/// failure is retried with a doubling delay up to `settings.max_deliver` attempts.
pub async fn consume_local<S: FairPlayStore>(
    store: S,
    mut games: tokio::sync::mpsc::UnboundedReceiver<bytes::Bytes>,
    settings: ConsumerSettings,
    analyser: Analyser,
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
        let mut attempt: i64 = 1;
        loop {
            let handled = process(
                &store,
                &analyser,
                &stats,
                &record,
                Duration::from_secs(3600),
                || async {},
            )
            .await;
            match handled {
                Handled::Done | Handled::Rejected => {
                    stats.settle();
                    break;
                }
                Handled::Transient(e) if attempt < settings.max_deliver => {
                    let delay = settings.retry_delay(attempt);
                    tracing::warn!(attempt, ?delay, error = %e, "screening a finished game failed; retrying");
                    ConsumerStats::bump(&stats.retries, 1);
                    attempt += 1;
                    tokio::select! {
                        _ = shutdown.wait() => return,
                        _ = tokio::time::sleep(delay) => {}
                    }
                }
                Handled::Transient(e) => {
                    tracing::error!(error = %e, "setting aside a finished game after repeated failures");
                    ConsumerStats::bump(&stats.set_aside, 1);
                    stats.settle();
                    break;
                }
            }
        }
    }
}

/// Serves the API on `listener` until `shutdown`.
pub async fn serve_api<S: FairPlayStore>(
    listener: impl Into<frontier_platform::inproc::Listener>,
    service: grpc::FairPlayService<S>,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let incoming = listener.into().incoming();
    tonic::transport::Server::builder()
        .layer(frontier_platform::admin::GrpcMetricsLayer {
            service: "fairplay",
        })
        .trace_fn(frontier_platform::trace::grpc_server_span)
        .add_service(service.into_server())
        .serve_with_incoming_shutdown(incoming, shutdown.wait_owned())
        .await
        .context("gRPC server")
}

use frontier_platform::admin::Zeroed;
/// The fair-play service's counters and gauges, exported at zero from the start.
const ZEROED: &[Zeroed] = &[
    Zeroed::plain("frontier_fairplay_set_aside_total"),
    Zeroed::plain("frontier_fairplay_retries_total"),
    Zeroed::by(
        "frontier_fairplay_rejected_total",
        "reason",
        &["undecodable", "invalid"],
    ),
    Zeroed::by(
        "frontier_fairplay_reports_total",
        "variant",
        &["standard", "hidden", "atomic"],
    ),
    Zeroed::by(
        "frontier_fairplay_decisions_total",
        "action",
        &["dismiss", "mark", "unmark"],
    ),
];
const GAUGES: &[&str] = &[
    "frontier_fairplay_backlog",
    "frontier_fairplay_reports_open",
];

/// Runs the fair-play service from configuration until `shutdown`.
pub async fn run(config: Config, shutdown: Shutdown) -> anyhow::Result<()> {
    let service = build(&config).await?;
    frontier_platform::admin::spawn(
        config.admin.admin_listen,
        "fairplay",
        service.readiness.clone(),
        shutdown.clone(),
    )
    .await
    .context("admin listener")?;
    let listener = TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("binding {}", config.listen))?;
    tracing::info!(addr = %listener.local_addr()?, "fair-play API listening");
    service.serve(listener, shutdown).await
}

/// The fair-play service, built and ready ([`build`] or [`Service::from_parts`], then
/// [`Service::serve`]).
pub struct Service<S = PgStore> {
    store: S,
    nats: async_nats::Client,
    ns: Namespace,
    settings: ConsumerSettings,
    analyser: Analyser,
    stats: Arc<ConsumerStats>,
    /// What `/readyz` checks.
    pub readiness: frontier_platform::admin::Readiness,
}

/// Builds the service from configuration: connects to Postgres (applying the fair-play
/// migrations) and NATS.
pub async fn build(config: &Config) -> anyhow::Result<Service> {
    frontier_platform::admin::start_at_zero(ZEROED, GAUGES);
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
    let mut settings = ConsumerSettings::named(&config.consumer);
    settings.ack_wait = config.ack_wait;
    settings.max_deliver = config.max_deliver;
    settings.stream_replicas = config.nats.nats_stream_replicas;
    if let Some(n) = config.concurrency {
        settings.concurrency = n.max(1);
    }
    let ratings = match &config.rating_url {
        Some(url) => RatingSource::connect(url).map_err(anyhow::Error::msg)?,
        None => RatingSource::default(),
    };
    let analyser = Analyser {
        settings: Settings {
            nodes: config.nodes,
            ..Settings::default()
        },
        ratings,
        clock: Arc::new(SystemClock),
    };
    let readiness = frontier_platform::admin::Readiness::new()
        .postgres(pool.clone())
        .nats(nats.clone());
    Ok(Service {
        readiness,
        ..Service::from_parts(
            PgStore::new(pool, Thresholds::default()),
            nats,
            ns,
            settings,
            analyser,
        )
    })
}

impl<S: FairPlayStore> Service<S> {
    /// A service over this store.
    pub fn from_parts(
        store: S,
        nats: async_nats::Client,
        ns: Namespace,
        settings: ConsumerSettings,
        analyser: Analyser,
    ) -> Self {
        Service {
            readiness: frontier_platform::admin::Readiness::new().nats(nats.clone()),
            store,
            nats,
            ns,
            settings,
            analyser,
            stats: Arc::default(),
        }
    }

    /// The consumer's counters.
    pub fn stats(&self) -> Arc<ConsumerStats> {
        self.stats.clone()
    }

    /// Serves the API on `listener` and consumes finished games until `shutdown`;
    /// whichever ends first stops the other.
    pub async fn serve(
        self,
        listener: impl Into<frontier_platform::inproc::Listener>,
        shutdown: Shutdown,
    ) -> anyhow::Result<()> {
        let api_service =
            grpc::FairPlayService::new(self.store.clone(), self.analyser.clock.clone());
        let mut api = tokio::spawn(serve_api(listener.into(), api_service, shutdown.clone()));
        tracing::info!("fair play screening finished games");
        let consumer = consume(
            self.store,
            self.nats,
            self.ns,
            self.settings,
            self.analyser,
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
        consumed.and(served.context("API task")?)
    }
}
