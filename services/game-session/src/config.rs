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
    /// TEST ONLY: start every new board of a variant from this position instead of the
    /// usual one, written `standard:FEN` or `atomic:FEN` (repeatable). Never set in
    /// production; no client can reach this setting.
    #[arg(long, env = "FRONTIER_TEST_START_FEN", hide = true)]
    pub test_start_fen: Vec<String>,
    /// How long after a player's last presence report (sent by its gateway while it
    /// follows its game) it still counts as connected.
    #[arg(long, env = "FRONTIER_PRESENCE_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub presence_timeout: Duration,
}

/// Parses a `--test-start-fen` value: `standard:FEN` or `atomic:FEN`.
pub fn parse_start_fen(s: &str) -> Result<(frontier_rules::Variant, String), String> {
    let (variant, fen) = s
        .split_once(':')
        .ok_or_else(|| format!("expected VARIANT:FEN, got {s:?}"))?;
    let variant = match variant {
        "standard" => frontier_rules::Variant::Standard,
        "atomic" => frontier_rules::Variant::Atomic,
        other => {
            return Err(format!(
                "a start position is for standard or atomic, not {other:?}"
            ));
        }
    };
    frontier_rules::Position::from_fen(variant, fen).map_err(|e| e.to_string())?;
    Ok((variant, fen.to_owned()))
}
