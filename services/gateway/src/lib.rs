//! gateway: the edge of the platform. Serves WebSocket clients and a small HTTP API, holds
//! no game state of its own, forwards commands to game-session over gRPC, and relays each
//! followed game's events from NATS (its client's own audience subject only).

pub mod accounts;
pub mod config;
pub mod http;
pub mod hub;
pub mod records;
pub mod sessions;
pub mod ws;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use frontier_platform::{JwtKeys, Namespace, Shutdown};
use tokio::net::TcpListener;

pub use config::Config;

use crate::accounts::{Accounts, MIGRATOR, PgAccounts};
use crate::hub::Hub;
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
}

/// What every request handler shares.
pub struct AppState<A> {
    /// Accounts.
    pub accounts: A,
    /// The rating service's read API (finished games and ratings), for the dashboard
    /// API; `None`: the dashboard answers 503 `unavailable`.
    pub ratings: Option<records::RatingClient>,
    /// JWT keys.
    pub jwt: JwtKeys,
    /// game-session client.
    pub sessions: Sessions,
    /// NATS fan-out.
    pub hub: Hub,
    /// Namespace.
    pub ns: Namespace,
    /// Settings.
    pub settings: Settings,
    /// Shutdown signal.
    pub shutdown: Shutdown,
}

/// Builds the state from configuration: connects to Postgres (and applies the gateway's
/// own migrations: accounts), NATS, and (lazily) game-session and the rating service.
pub async fn build(
    config: &Config,
    shutdown: Shutdown,
) -> anyhow::Result<Arc<AppState<PgAccounts>>> {
    let ns = Namespace::new(&config.namespace.namespace).map_err(anyhow::Error::msg)?;
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(16)
        .acquire_timeout(Duration::from_secs(5))
        .connect(&config.postgres.database_url)
        .await
        .context("connecting to Postgres")?;
    MIGRATOR.run(&pool).await.context("applying migrations")?;
    let nats = async_nats::connect(&config.nats.nats_url)
        .await
        .context("connecting to NATS")?;
    let jwt = JwtKeys::new(config.jwt.jwt_secret.as_bytes(), config.jwt.jwt_ttl)
        .map_err(anyhow::Error::msg)?;
    Ok(Arc::new(AppState {
        accounts: PgAccounts::new(pool),
        ratings: config
            .rating_url
            .as_deref()
            .map(records::connect)
            .transpose()
            .map_err(anyhow::Error::msg)?,
        jwt,
        sessions: sessions::connect(&config.game_session_urls)?,
        hub: Hub::new(Box::new(hub::NatsSource(nats)), 1024),
        ns,
        settings: Settings {
            public_url: config.public_url.clone(),
            rate_per_second: config.ws_rate,
            rate_burst: config.ws_burst,
            auth_timeout: config.ws_auth_timeout,
            outbound_queue: 512,
            presence_interval: config.presence_interval,
        },
        shutdown,
    }))
}

/// Serves `state` on `listener` until its shutdown signal.
pub async fn serve<A: Accounts>(
    listener: TcpListener,
    state: Arc<AppState<A>>,
) -> anyhow::Result<()> {
    use axum::serve::ListenerExt as _;
    let shutdown = state.shutdown.clone();
    // Small frames both ways: Nagle's algorithm with delayed ACKs would hold each for ~40 ms.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "TCP_NODELAY");
        }
    });
    axum::serve(listener, http::router(state))
        .with_graceful_shutdown(shutdown.wait_owned())
        .await
        .context("HTTP server")
}

/// Runs the gateway from configuration until `shutdown`.
pub async fn run(config: Config, shutdown: Shutdown) -> anyhow::Result<()> {
    let state = build(&config, shutdown).await?;
    let listener = TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("binding {}", config.listen))?;
    tracing::info!(addr = %listener.local_addr()?, "gateway listening");
    serve(listener, state).await
}
