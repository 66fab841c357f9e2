//! The matchmaking service's configuration.

use std::net::SocketAddr;
use std::time::Duration;

use crate::matchmaker::Settings;
use frontier_pairing::{BotWaits, PairingConfig, Pool, WindowSchedule};
use frontier_platform::config::{AdminArgs, NamespaceArgs, NatsArgs, RedisArgs, parse_duration};

/// matchmaking: quick-match seeks, paired by rating, a person first and then a labelled bot.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "matchmaking", version)]
pub struct Config {
    /// Where the gRPC API (for the gateway) listens.
    #[arg(
        long,
        env = "FRONTIER_MATCHMAKING_LISTEN",
        default_value = "127.0.0.1:50054"
    )]
    pub listen: SocketAddr,
    /// game-session gRPC URLs, comma-separated (games are created there).
    #[arg(
        long,
        env = "FRONTIER_GAME_SESSION_URLS",
        value_delimiter = ',',
        default_value = "http://127.0.0.1:50051"
    )]
    pub game_session_urls: Vec<String>,
    /// The rating service's read API (players' ratings); without it everyone counts as 1500.
    #[arg(long, env = "FRONTIER_RATING_URL")]
    pub rating_url: Option<String>,
    /// Redis (tickets).
    #[command(flatten)]
    pub redis: RedisArgs,
    /// NATS (`matched` notices on each player's subject).
    #[command(flatten)]
    pub nats: NatsArgs,
    /// Namespace.
    #[command(flatten)]
    pub namespace: NamespaceArgs,
    /// Pairing: the steps, the rating windows, the bot fallback, leases and grace.
    #[command(flatten)]
    pub pairing: PairingArgs,
    /// Admin endpoints: `/metrics`, `/healthz`, `/readyz`.
    #[command(flatten)]
    pub admin: AdminArgs,
}

/// How pairing runs: the flags `frontier matchmaking` and `frontier dev` share.
#[derive(Debug, Clone, clap::Args)]
pub struct PairingArgs {
    /// Time between pairing steps.
    #[arg(long, env = "FRONTIER_MATCHMAKING_INTERVAL", default_value = "100ms", value_parser = parse_duration)]
    pub interval: Duration,
    /// Half-width of the rating window of a ticket that just arrived (points).
    #[arg(long, env = "FRONTIER_MATCHMAKING_WINDOW", default_value_t = 100)]
    pub window: u32,
    /// Points the window widens by per second of waiting.
    #[arg(long, env = "FRONTIER_MATCHMAKING_WIDEN", default_value_t = 50)]
    pub widen_per_second: u32,
    /// After this wait the window is the whole pool.
    #[arg(long, env = "FRONTIER_MATCHMAKING_FULL_AFTER", default_value = "30s", value_parser = parse_duration)]
    pub full_after: Duration,
    /// Wait before a bot, in every pool not named in `--bot-after-pool` (0 disables).
    #[arg(long, env = "FRONTIER_MATCHMAKING_BOT_AFTER", default_value = "20s", value_parser = parse_duration)]
    pub bot_after: Duration,
    /// Per-pool waits before a bot, `pool=duration` comma-separated
    /// (`standard:1+0:casual=10s,hidden:30+0:rated=0`).
    #[arg(long, env = "FRONTIER_MATCHMAKING_BOT_AFTER_POOL", value_delimiter = ',', value_parser = parse_pool_wait)]
    pub bot_after_pool: Vec<(Pool, Duration)>,
    /// How long a pairing is left to the instance that made it before another one may
    /// create its game.
    #[arg(long, env = "FRONTIER_MATCHMAKING_LEASE", default_value = "5s", value_parser = parse_duration)]
    pub lease: Duration,
    /// How long a seek outlives its player's last connection.
    #[arg(long, env = "FRONTIER_MATCHMAKING_GRACE", default_value = "10s", value_parser = parse_duration)]
    pub grace: Duration,
}

fn parse_pool_wait(s: &str) -> Result<(Pool, Duration), String> {
    let (pool, wait) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}`: expected pool=duration"))?;
    let pool: Pool = pool.parse().map_err(|e| format!("{e}"))?;
    Ok((pool, parse_duration(wait)?))
}

impl Config {
    /// The pairing library's configuration.
    pub fn pairing(&self) -> PairingConfig {
        self.pairing.pairing()
    }

    /// The matchmaker's timing.
    pub fn settings(&self) -> Settings {
        self.pairing.settings()
    }
}

impl PairingArgs {
    /// The matchmaker's timing.
    pub fn settings(&self) -> Settings {
        Settings {
            interval: self.interval,
            lease: self.lease,
            grace: self.grace,
        }
    }

    /// The pairing library's configuration.
    pub fn pairing(&self) -> PairingConfig {
        PairingConfig {
            window: WindowSchedule {
                initial: self.window,
                widen_per_second: self.widen_per_second,
                full_after_ms: self.full_after.as_millis() as u64,
            },
            bots: BotWaits {
                default_ms: self.bot_after.as_millis() as u64,
                per_pool: self
                    .bot_after_pool
                    .iter()
                    .map(|(p, d)| (*p, d.as_millis() as u64))
                    .collect(),
            },
        }
    }
}
