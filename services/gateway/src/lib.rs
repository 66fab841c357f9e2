//! gateway: the edge of the platform. Serves WebSocket clients and a small HTTP API, holds
//! no game state of its own, forwards commands to game-session over gRPC, and relays each
//! followed game's events from NATS (its client's own audience subject only).

pub mod accounts;
pub mod config;
pub mod followers;
pub mod hashing;
pub mod http;
pub mod hub;
pub mod limits;
pub mod matchmaking;
pub mod moderation;
pub mod notices;
pub mod preferences;
pub mod records;
pub mod sessions;
pub mod sqlite;
pub mod web;
pub mod ws;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use frontier_platform::{JwtKeys, Namespace, Shutdown};
use tokio::net::TcpListener;

pub use config::Config;

use crate::accounts::{Accounts, MIGRATOR, PgAccounts};
use crate::hashing::HashPool;
use crate::hub::Hub;
use crate::limits::Limits;
use crate::sessions::Sessions;

/// Per-connection settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Public base URL for invite links.
    pub public_url: String,
    /// Average messages per second per connection.
    pub rate_per_second: f64,
    /// Burst size.
    pub rate_burst: u32,
    /// Time allowed to authenticate.
    pub auth_timeout: Duration,
    /// Frames queued for a client before it counts as too slow.
    pub outbound_queue: usize,
    /// How often a seated player's presence is reported while it follows its game.
    pub presence_interval: Duration,
    /// How long after a player's last connection closed their standing rematch offers
    /// lapse (a reconnect within it keeps them).
    pub rematch_grace: Duration,
}

/// What every request handler shares.
pub struct AppState<A> {
    /// Accounts.
    pub accounts: A,
    /// The rating service's read API (finished games and ratings), for the dashboard
    /// API; `None`: the dashboard answers 503 `unavailable`.
    pub ratings: Option<records::RatingClient>,
    /// The fair-play service (the moderation API, and the marks: a marked player may not
    /// play rated and is left off the leaderboard); `None`: nobody is marked and the
    /// moderation API answers 503 `unavailable`.
    pub fairplay: Option<moderation::FairPlayClient>,
    /// The matchmaking service (quick match); `None`: `seek`, `cancel_seek` and `status`
    /// answer `unavailable`.
    pub matchmaking: Option<matchmaking::MatchmakingLink>,
    /// JWT keys.
    pub jwt: JwtKeys,
    /// game-session client.
    pub sessions: Sessions,
    /// NATS fan-out.
    pub hub: Hub,
    /// Every follow of a game on this gateway, for the presence tick.
    pub followers: followers::Followers,
    /// Every player's notices, routed to their connections here.
    pub notices: notices::PlayerNotices,
    /// Namespace.
    pub ns: Namespace,
    /// Abuse limits (Redis).
    pub limits: Limits,
    /// What `/readyz` checks (Postgres, NATS, Redis).
    pub readiness: frontier_platform::admin::Readiness,
    /// Settings.
    pub settings: Settings,
    /// Shutdown signal.
    pub shutdown: Shutdown,
    /// The open WebSocket connections' tasks: on shutdown each closes its socket with 1001
    /// (so the client resumes on another gateway), and `serve` waits for them.
    pub connections: tokio_util::task::TaskTracker,
}

use frontier_platform::admin::Zeroed;
/// The gateway's counters and gauges, exported at zero from the start.
const ZEROED: &[Zeroed] = &[
    Zeroed::by(
        "frontier_gateway_refusals_total",
        "reason",
        &[
            "guest_rate",
            "register_rate",
            "login_rate",
            "board_rate",
            "ws_address",
            "ws_player",
            "ws_messages",
            "hash_busy",
            "waiting_boards",
            "address_at_accept",
        ],
    ),
    Zeroed::plain("frontier_gateway_relayed_frames_total"),
    Zeroed::by(
        "frontier_gateway_fairplay_errors_total",
        "call",
        &["is_marked", "marked_among"],
    ),
    Zeroed::by(
        "frontier_gateway_ws_messages_total",
        "type",
        &["move", "other"],
    ),
    Zeroed::by(
        "frontier_gateway_ws_errors_total",
        "code",
        &["internal", "unavailable"],
    ),
];
const GAUGES: &[&str] = &["frontier_gateway_ws_connections"];

/// Builds the state from configuration: connects to Postgres (and applies the gateway's own
/// migrations: accounts), NATS, Redis, and (lazily) game-session and the rating service;
/// starts the password-hashing threads and the guest clean-up.
pub async fn build(config: &Config) -> anyhow::Result<Service> {
    frontier_platform::admin::start_at_zero(ZEROED, GAUGES);
    // The state's own signal: `Service::serve` trips it when the caller's signal comes.
    let shutdown = Shutdown::new();
    let ns = Namespace::new(&config.namespace.namespace).map_err(anyhow::Error::msg)?;
    let pool = config
        .postgres
        .pool(16)
        .await
        .context("connecting to Postgres")?;
    MIGRATOR.run(&pool).await.context("applying migrations")?;
    let nats = frontier_platform::streams::connect(&config.nats.nats_url)
        .await
        .map_err(anyhow::Error::msg)?;
    let jwt = config.jwt.keys().map_err(anyhow::Error::msg)?;
    let redis = config
        .redis
        .connect()
        .await
        .context("connecting to Redis")?;
    let hasher = HashPool::with_limits(hashing::PoolLimits {
        threads: config.limits.hashing.hash_threads,
        queue: config.limits.hashing.hash_queue,
        per_second: config.limits.hashing.hash_rate,
        nice: config.limits.hashing.hash_nice,
    })
    .context("starting the password-hashing threads")?;
    let ratings = config
        .rating_url
        .as_deref()
        .map(records::connect)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let fairplay = config
        .fairplay_url
        .as_deref()
        .map(moderation::connect)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    tokio::spawn(sweep_guests(
        pool.clone(),
        ratings.clone(),
        config.limits.guest_ttl,
        config.limits.guest_sweep_interval,
        config.limits.guest_sweep_batch,
        shutdown.clone(),
    ));
    let matchmaking = (!config.matchmaking_url.is_empty())
        .then(|| matchmaking::MatchmakingLink::connect(&config.matchmaking_url))
        .transpose()?;
    let notices = notices::PlayerNotices::new(&ns);
    notices
        .nats(&nats)
        .await
        .map_err(|e| anyhow::anyhow!("following player notices on NATS: {e}"))?;
    Ok(Arc::new(AppState {
        accounts: PgAccounts::new(pool.clone(), hasher),
        notices,
        ratings,
        fairplay,
        matchmaking,
        jwt,
        sessions: sessions::connect(&config.game_session_urls)?,
        hub: Hub::new(Box::new(hub::NatsSource(nats.clone()))),
        followers: Default::default(),
        readiness: frontier_platform::admin::Readiness::new()
            .postgres(pool.clone())
            .nats(nats.clone())
            .redis(redis.clone()),
        limits: Limits::new(Some(redis), ns.clone(), config.limits.clone()),
        ns,
        settings: Settings {
            public_url: config.public_url.clone(),
            rate_per_second: config.ws_rate,
            rate_burst: config.ws_burst,
            auth_timeout: config.ws_auth_timeout,
            outbound_queue: 512,
            presence_interval: config.presence_interval,
            rematch_grace: config.rematch_grace,
        },
        shutdown,
        connections: tokio_util::task::TaskTracker::new(),
    })
    .into())
}

/// The gateway, built and ready: [`Service::serve`] runs it on a listener until the
/// shutdown signal. Every service crate has this shape (`build` from its configuration, or
/// `from_state` with other parts, then `serve`).
pub struct Service<A: Accounts = PgAccounts> {
    state: Arc<AppState<A>>,
}

impl<A: Accounts> From<Arc<AppState<A>>> for Service<A> {
    fn from(state: Arc<AppState<A>>) -> Self {
        Service { state }
    }
}

impl<A: Accounts> Service<A> {
    /// A gateway over this state (other accounts, sources and clients: tests, the
    /// single-process mode).
    pub fn from_state(state: Arc<AppState<A>>) -> Self {
        Service { state }
    }

    /// What every request handler shares.
    pub fn state(&self) -> &Arc<AppState<A>> {
        &self.state
    }

    /// Serves HTTP and WebSocket clients on `listener` until `shutdown`; then stops
    /// accepting, finishes HTTP requests in flight, and closes every socket with 1001.
    pub async fn serve(self, listener: TcpListener, shutdown: Shutdown) -> anyhow::Result<()> {
        let inner = self.state.shutdown.clone();
        let link = tokio::spawn(async move {
            shutdown.wait().await;
            inner.trigger();
        });
        let served = serve(listener, self.state).await;
        link.abort();
        served
    }
}

/// Serves `state` on `listener` until its shutdown signal.
async fn serve<A: Accounts>(listener: TcpListener, state: Arc<AppState<A>>) -> anyhow::Result<()> {
    use axum::serve::ListenerExt as _;
    let shutdown = state.shutdown.clone();
    // The gateway-wide chores of its connections: one batch an interval for all of them.
    tokio::spawn(state.limits.clone().keep_leases(shutdown.clone()));
    tokio::spawn(state.followers.clone().run(
        state.sessions.clone(),
        state.settings.presence_interval,
        shutdown.clone(),
    ));
    // An address over one of its per-address limits is refused at accept, before a byte of
    // HTTP is read. Small frames both ways: Nagle's algorithm with delayed ACKs would hold
    // each for ~40 ms.
    let listener = RefuseAtAccept {
        inner: listener,
        limits: state.limits.clone(),
    };
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "TCP_NODELAY");
        }
    });
    // The peer address feeds the per-address limits.
    let connections = state.connections.clone();
    let app = http::router(state).into_make_service_with_connect_info::<SocketAddr>();
    // Two stages: on shutdown stop accepting (and finish HTTP requests in flight), then
    // wait for every WebSocket to have sent its 1001 close.
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown.wait_owned())
        .await
        .context("HTTP server");
    connections.close();
    connections.wait().await;
    served
}

/// The answer to a connection refused at accept: written without reading the request
/// (whatever it was, a WebSocket upgrade included), then the connection is closed.
const REFUSED_AT_ACCEPT: &[u8] = b"HTTP/1.1 429 Too Many Requests\r\n\
Content-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\n\
Content-Length: 92\r\n\r\n\
{\"error\":{\"code\":\"rate_limited\",\"message\":\"too many requests from your address; try later\"}}";

/// The gateway's listener: a connection from an address that one of its per-address
/// windows (guests, registrations, logins) currently refuses is answered 429 and closed at
/// accept (`frontier_gateway_refusals_total{reason="address_at_accept"}`), at the cost of
/// an accept, a map look-up and a write — not of parsing a request, routing it and
/// rendering a refusal. Every 429 of those windows closes its connection, so a flood
/// must reconnect and meets this.
struct RefuseAtAccept {
    inner: TcpListener,
    limits: limits::Limits,
}

impl axum::serve::Listener for RefuseAtAccept {
    type Io = tokio::net::TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (tcp, peer) = axum::serve::Listener::accept(&mut self.inner).await;
            if !self.limits.refused_at_accept(peer.ip()) {
                return (tcp, peer);
            }
            limits::count_refusal("address_at_accept");
            // Best effort: a full send buffer just closes the connection.
            let _ = tcp.try_write(REFUSED_AT_ACCEPT);
            drop(tcp);
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// Removes expired guests every `interval` until `shutdown` (see
/// [`accounts::expire_guests`]; several gateways may run it at once).
async fn sweep_guests(
    pool: sqlx::PgPool,
    ratings: Option<records::RatingClient>,
    ttl: Duration,
    interval: Duration,
    batch: i64,
    shutdown: Shutdown,
) {
    let Some(ratings) = ratings else {
        // Without the rating service nobody can tell which guests have games: keep all.
        tracing::warn!("no rating service configured: guests are not expired");
        return;
    };
    let mut tick = tokio::time::interval(interval.max(Duration::from_millis(100)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.wait() => return,
            _ = tick.tick() => {}
        }
        match accounts::expire_guests(&pool, &ratings, ttl, batch).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(removed = n, "expired guests removed"),
            Err(e) => tracing::warn!(error = %e, "guest clean-up failed"),
        }
    }
}

/// Runs the gateway from configuration until `shutdown`.
pub async fn run(config: Config, shutdown: Shutdown) -> anyhow::Result<()> {
    let service = build(&config).await?;
    frontier_platform::admin::spawn(
        config.admin.admin_listen,
        "gateway",
        service.state().readiness.clone(),
        shutdown.clone(),
    )
    .await
    .context("admin listener")?;
    let listener = TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("binding {}", config.listen))?;
    tracing::info!(addr = %listener.local_addr()?, "gateway listening");
    service.serve(listener, shutdown).await
}
