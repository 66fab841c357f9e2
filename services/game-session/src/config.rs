//! game-session's configuration.

use std::net::SocketAddr;
use std::time::Duration;

use frontier_platform::config::{NamespaceArgs, NatsArgs, RedisArgs, parse_duration};

/// game-session: the authority over live games.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "game-session", version)]
pub struct Config {
    /// Address the gRPC server listens on.
    #[arg(
        long,
        env = "FRONTIER_GAME_SESSION_LISTEN",
        default_value = "127.0.0.1:50051"
    )]
    pub listen: SocketAddr,
    /// Redis.
    #[command(flatten)]
    pub redis: RedisArgs,
    /// NATS.
    #[command(flatten)]
    pub nats: NatsArgs,
    /// Namespace.
    #[command(flatten)]
    pub namespace: NamespaceArgs,
    /// How often finished games not yet acknowledged by the stream are sent again.
    #[arg(long, env = "FRONTIER_OUTBOX_INTERVAL", default_value = "5s", value_parser = parse_duration)]
    pub outbox_interval: Duration,
    /// TEST ONLY: give every hidden game this layout (canonical form, e.g.
    /// `RNBQBNRPPPPPPPP/rnbqbnrpppppppp`). Never set in production: it makes the shuffle
    /// known in advance. No client can reach this setting.
    #[arg(long, env = "FRONTIER_TEST_FIXED_LAYOUT", hide = true)]
    pub test_fixed_layout: Option<String>,
    /// How long a player of a game without clock must be disconnected before the opponent
    /// may claim the game.
    #[arg(long, env = "FRONTIER_ABSENCE_LIMIT", default_value = "5m", value_parser = parse_duration)]
    pub absence_limit: Duration,
    /// Each side's limit for its first move; missing it aborts the game.
    #[arg(long, env = "FRONTIER_FIRST_MOVE_LIMIT", default_value = "30s", value_parser = parse_duration)]
    pub first_move_limit: Duration,
    /// TEST ONLY: the length of one clock "minute" (production: 60s). Lowering it gives
    /// tests short clocks without any change to the public API.
    #[arg(long, env = "FRONTIER_TEST_CLOCK_MINUTE", hide = true, default_value = "60s", value_parser = parse_duration)]
    pub test_clock_minute: Duration,
}
