//! The matchmaking service: quick-match seeks in pools, paired by rating (a person first,
//! then a clearly labelled bot), on any number of instances with tickets in Redis.
//!
//! `ticket` (the stored forms), `store` (the [`TicketStore`] trait and its Redis adapter:
//! tickets, pools and the atomic steps — why a script and not a lease is written there),
//! `memory` (the in-memory adapter, for `frontier dev`), `matchmaker` (seek, cancel, status, the
//! pairing step and game creation over seams: [`GameMaker`], [`Notifier`],
//! [`RatingSource`]).

pub mod matchmaker;
pub mod memory;
pub mod store;
pub mod ticket;

pub use matchmaker::{
    CreateError, GameMaker, MatchError, MatchedNotice, Matchmaker, NoRatings, Notifier, Opponent,
    RatingSource, SeekAnswer, Settings, Status, StepReport, notices,
};
pub use memory::MemoryTickets;
pub use store::{Cancelled, Placed, RedisTickets, StoreError, TicketStore};
pub use ticket::{MatchRecord, Seat, Seeker, StoredTicket};

pub mod adapters;
pub mod config;
pub mod grpc;

use std::sync::Arc;

use anyhow::Context as _;
use frontier_platform::admin::Readiness;
use frontier_platform::time::SystemClock;
use frontier_platform::{Namespace, Shutdown};
use tokio::net::TcpListener;

pub use adapters::{
    GameSessionMaker, LocalNotifier, NatsNotifier, RatingServiceSource, Ratingsource,
};
pub use config::{Config, PairingArgs};
pub use grpc::MatchmakingService;

/// Runs a matchmaking instance from configuration until `shutdown`.
pub async fn run(config: Config, shutdown: Shutdown) -> anyhow::Result<()> {
    let service = build(&config).await?;
    frontier_platform::admin::spawn(
        config.admin.admin_listen,
        "matchmaking",
        service.readiness.clone(),
        shutdown.clone(),
    )
    .await
    .context("admin listener")?;
    let listener = TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("binding {}", config.listen))?;
    tracing::info!(addr = %listener.local_addr()?, "matchmaking listening");
    service.serve(listener, shutdown).await
}

/// A matchmaking instance, built and ready: [`Service::serve`] answers the gateway's calls
/// and runs the pairing steps until the shutdown signal.
pub struct Service<G = GameSessionMaker, N = NatsNotifier, R = Ratingsource, T = RedisTickets> {
    matchmaker: Arc<Matchmaker<G, N, R, T>>,
    /// What `/readyz` checks.
    pub readiness: Readiness,
}

use frontier_platform::admin::Zeroed;
/// Matchmaking's counters, exported at zero from the start.
const ZEROED: &[Zeroed] = &[
    Zeroed::by(
        "frontier_matchmaking_cancellations_total",
        "reason",
        &["cancel", "disconnect"],
    ),
    Zeroed::plain("frontier_matchmaking_conflicts_total"),
    Zeroed::plain("frontier_matchmaking_restored_total"),
    Zeroed::plain("frontier_matchmaking_rating_lookup_failures_total"),
];
const GAUGES: &[&str] = &[];

/// Builds an instance from configuration: connects to Redis and NATS (game-session and the
/// rating service lazily).
pub async fn build(config: &Config) -> anyhow::Result<Service> {
    frontier_platform::admin::start_at_zero(ZEROED, GAUGES);
    let ns = Namespace::new(&config.namespace.namespace).map_err(anyhow::Error::msg)?;
    let conn = config
        .redis
        .connect()
        .await
        .context("connecting to Redis")?;
    let nats = frontier_platform::streams::connect(&config.nats.nats_url)
        .await
        .map_err(anyhow::Error::msg)?;
    let ratings = match &config.rating_url {
        Some(url) => Ratingsource::Service(RatingServiceSource::new(
            frontier_proto::rating_client(url).map_err(anyhow::Error::msg)?,
        )),
        None => Ratingsource::None,
    };
    let matchmaker = Matchmaker::new(
        RedisTickets::new(conn.clone(), &ns),
        GameSessionMaker::new(&config.game_session_urls).map_err(anyhow::Error::msg)?,
        NatsNotifier::new(nats.clone(), ns),
        ratings,
        config.pairing(),
        Arc::new(SystemClock),
        config.settings(),
    );
    Ok(Service {
        matchmaker: Arc::new(matchmaker),
        readiness: Readiness::new().redis(conn).nats(nats),
    })
}

impl<G: GameMaker, N: Notifier, R: RatingSource, T: TicketStore> Service<G, N, R, T> {
    /// An instance over these parts.
    pub fn from_parts(matchmaker: Matchmaker<G, N, R, T>) -> Self {
        Service {
            matchmaker: Arc::new(matchmaker),
            readiness: Readiness::new(),
        }
    }

    /// Serves the gRPC API on `listener` and runs pairing steps until `shutdown`; a step in
    /// progress finishes (its claimed pairings are created or left pending for the next
    /// instance).
    pub async fn serve(
        self,
        listener: impl Into<frontier_platform::inproc::Listener>,
        shutdown: Shutdown,
    ) -> anyhow::Result<()> {
        let incoming = listener.into().incoming();
        let api = tonic::transport::Server::builder()
            .layer(frontier_platform::admin::GrpcMetricsLayer {
                service: "matchmaking",
            })
            .trace_fn(frontier_platform::trace::grpc_server_span)
            .add_service(MatchmakingService::new(self.matchmaker.clone()).into_server())
            .serve_with_incoming_shutdown(incoming, shutdown.clone().wait_owned());
        let pairing = pairing_loop(self.matchmaker, shutdown.clone());
        let (served, ()) = tokio::join!(api, pairing);
        served.context("gRPC server")
    }
}

/// Pairing steps every `interval` (and pending pairings taken over), until `shutdown`.
async fn pairing_loop<G: GameMaker, N: Notifier, R: RatingSource, T: TicketStore>(
    matchmaker: Arc<Matchmaker<G, N, R, T>>,
    shutdown: Shutdown,
) {
    let mut ticker = tokio::time::interval(matchmaker.settings().interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The colour coin: a random bit per even pairing.
    let mut coin = || uuid::Uuid::new_v4().as_bytes()[0] & 1 == 1;
    loop {
        tokio::select! {
            _ = shutdown.wait() => return,
            _ = ticker.tick() => {}
        }
        if let Err(e) = matchmaker.step(&mut coin).await {
            tracing::warn!(error = %e, "pairing step failed");
        }
        if let Err(e) = matchmaker.retry_pending().await {
            tracing::warn!(error = %e, "taking over pending pairings failed");
        }
        match matchmaker.store().waiting_per_pool().await {
            Ok(counts) => {
                for (pool, n) in counts {
                    metrics::gauge!("frontier_matchmaking_tickets_waiting", "pool" => pool.to_string())
                        .set(n as f64);
                }
            }
            Err(e) => tracing::warn!(error = %e, "counting tickets failed"),
        }
    }
}
