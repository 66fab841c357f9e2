//! The gateway's configuration.

use std::net::SocketAddr;
use std::time::Duration;

use frontier_platform::config::{
    JwtArgs, NamespaceArgs, NatsArgs, PostgresArgs, RedisArgs, parse_duration,
};

use crate::limits::LimitArgs;

/// gateway: the WebSocket and HTTP edge.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "gateway", version)]
pub struct Config {
    /// Address the HTTP/WebSocket server listens on.
    #[arg(
        long,
        env = "FRONTIER_GATEWAY_LISTEN",
        default_value = "127.0.0.1:8080"
    )]
    pub listen: SocketAddr,
    /// game-session gRPC URLs, comma-separated; requests are balanced across them.
    #[arg(
        long,
        env = "FRONTIER_GAME_SESSION_URLS",
        value_delimiter = ',',
        default_value = "http://127.0.0.1:50051"
    )]
    pub game_session_urls: Vec<String>,
    /// The rating service's read API (the dashboard and PGN), e.g. `http://127.0.0.1:50053`.
    /// Without it the dashboard routes answer 503 `unavailable`.
    #[arg(long, env = "FRONTIER_RATING_URL")]
    pub rating_url: Option<String>,
    /// The fair-play service (moderation and marks), e.g. `http://127.0.0.1:50055`.
    /// Without it nobody is marked and the moderation routes answer 503 `unavailable`; when
    /// it does not answer, rated play and the leaderboard go on unfiltered.
    #[arg(long, env = "FRONTIER_FAIRPLAY_URL")]
    pub fairplay_url: Option<String>,
    /// The matchmaking instances (quick match), comma-separated, e.g.
    /// `http://10.0.0.5:50054,http://10.0.0.6:50054` (or one service address): calls go
    /// round them, and one that cannot be reached is retried on the next. Without any,
    /// `seek` answers `unavailable`.
    #[arg(
        long,
        alias = "matchmaking-urls",
        env = "FRONTIER_MATCHMAKING_URL",
        value_delimiter = ','
    )]
    pub matchmaking_url: Vec<String>,
    /// The public base URL of the site, for invite links.
    #[arg(
        long,
        env = "FRONTIER_PUBLIC_URL",
        default_value = "http://127.0.0.1:8080"
    )]
    pub public_url: String,
    /// NATS.
    #[command(flatten)]
    pub nats: NatsArgs,
    /// Postgres.
    #[command(flatten)]
    pub postgres: PostgresArgs,
    /// Redis (the abuse limits every gateway shares).
    #[command(flatten)]
    pub redis: RedisArgs,
    /// Abuse limits, password hashing and guest expiry.
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Admin endpoints: `/metrics` (refusals by reason, WebSocket traffic, …), `/healthz`,
    /// `/readyz` (Postgres, NATS and Redis reachable).
    #[command(flatten)]
    pub admin: frontier_platform::config::AdminArgs,
    /// Namespace.
    #[command(flatten)]
    pub namespace: NamespaceArgs,
    /// JWT.
    #[command(flatten)]
    pub jwt: JwtArgs,
    /// Messages per second a connection may send, on average.
    #[arg(long, env = "FRONTIER_WS_RATE", default_value_t = 20.0)]
    pub ws_rate: f64,
    /// Messages a connection may send in a burst.
    #[arg(long, env = "FRONTIER_WS_BURST", default_value_t = 40)]
    pub ws_burst: u32,
    /// How often a connected player's presence is reported to game-session (absence claims
    /// in games without clock).
    #[arg(long, env = "FRONTIER_PRESENCE_INTERVAL", default_value = "10s", value_parser = parse_duration)]
    pub presence_interval: Duration,
    /// How long after a player's last connection closed their standing rematch offers lapse
    /// (a reconnect within it keeps them).
    #[arg(long, env = "FRONTIER_REMATCH_GRACE", default_value = "10s", value_parser = parse_duration)]
    pub rematch_grace: Duration,
    /// How long a new connection may take to authenticate.
    #[arg(long, env = "FRONTIER_WS_AUTH_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub ws_auth_timeout: Duration,
}
