//! The clock service's configuration.

use std::time::Duration;

use frontier_platform::config::{AdminArgs, NamespaceArgs, RedisArgs, parse_duration};

/// clock: fires flag falls and first-move limits.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "clock", version)]
pub struct Config {
    /// game-session gRPC URLs, comma-separated.
    #[arg(
        long,
        env = "FRONTIER_GAME_SESSION_URLS",
        value_delimiter = ',',
        default_value = "http://127.0.0.1:50051"
    )]
    pub game_session_urls: Vec<String>,
    /// Redis.
    #[command(flatten)]
    pub redis: RedisArgs,
    /// Namespace.
    #[command(flatten)]
    pub namespace: NamespaceArgs,
    /// How long to wait before looking again after a look that failed (Redis unreachable).
    /// Otherwise the clock sleeps until its next deadline (at most 500 ms) or until
    /// game-session nudges it of a sooner one.
    #[arg(long, env = "FRONTIER_CLOCK_POLL", default_value = "20ms", value_parser = parse_duration)]
    pub poll_interval: Duration,
    /// How long a claimed deadline is held before another instance may take it over.
    #[arg(long, env = "FRONTIER_CLOCK_LEASE", default_value = "500ms", value_parser = parse_duration)]
    pub lease: Duration,
    /// Most deadlines claimed per poll.
    #[arg(long, env = "FRONTIER_CLOCK_BATCH", default_value_t = 256)]
    pub batch: usize,
    /// Admin endpoints: `/metrics` (deadlines tracked, firing lag, …), `/healthz`,
    /// `/readyz`.
    #[command(flatten)]
    pub admin: AdminArgs,
}
