//! game-session's configuration.

use std::net::SocketAddr;
use std::time::Duration;

use frontier_platform::config::{NamespaceArgs, NatsArgs, RedisArgs, parse_duration};
use frontier_platform::envelope::EventMetadata;

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
    /// Acknowledge a write (a move, a join, a new game…) only once this many Redis
    /// replicas confirmed it (`WAIT` after the compare-and-set), so that a replica promoted
    /// in a failover holds every acknowledged move. A write they do not confirm within
    /// `--redis-ack-timeout` is answered `unavailable` (the client sends it again under
    /// the same id; it is never applied twice). The price: a round trip to the replicas
    /// per write; and with fewer replicas up than this, writes wait. Unset: 1 if every
    /// Redis master has a replica at start, else 0 — a failover may then lose the last
    /// writes a master acknowledged.
    #[arg(long, env = "FRONTIER_REDIS_ACK_REPLICAS")]
    pub redis_ack_replicas: Option<u32>,
    /// How long a write waits for `--redis-ack-replicas` replicas before it is answered
    /// `unavailable` (below 5s, a Redis command's own limit).
    #[arg(long, env = "FRONTIER_REDIS_ACK_TIMEOUT", default_value = "1s", value_parser = parse_duration)]
    pub redis_ack_timeout: Duration,
    /// NATS.
    #[command(flatten)]
    pub nats: NatsArgs,
    /// Namespace.
    #[command(flatten)]
    pub namespace: NamespaceArgs,
    /// How often finished games and bot jobs not yet acknowledged by their streams are sent
    /// again (bot jobs whose game moved on are dropped instead).
    #[arg(long, env = "FRONTIER_OUTBOX_INTERVAL", default_value = "5s", value_parser = parse_duration)]
    pub outbox_interval: Duration,
    /// How games are played: limits and (test builds only) test settings.
    #[command(flatten)]
    pub play: PlayArgs,
    /// Admin endpoints: `/metrics`, `/healthz`, `/readyz` (Redis and NATS reachable).
    #[command(flatten)]
    pub admin: frontier_platform::config::AdminArgs,
}

/// How games are played, whatever the adapters (also the single-process mode's flags).
#[derive(Debug, Clone, clap::Args)]
pub struct PlayArgs {
    /// How long a player of a game without clock must be disconnected before the opponent
    /// may claim the game.
    #[arg(long, env = "FRONTIER_ABSENCE_LIMIT", default_value = "5m", value_parser = parse_duration)]
    pub absence_limit: Duration,
    /// Each side's limit for its first move; missing it aborts the game.
    #[arg(long, env = "FRONTIER_FIRST_MOVE_LIMIT", default_value = "30s", value_parser = parse_duration)]
    pub first_move_limit: Duration,
    /// How long after a player's last presence report (sent by its gateway while it
    /// follows its game) it still counts as connected.
    #[arg(long, env = "FRONTIER_PRESENCE_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub presence_timeout: Duration,
    /// How long a rematch offer stands (unless it lapses first: a player leaves or seeks);
    /// at most the time a finished game stays in Redis (1 hour).
    #[arg(long, env = "FRONTIER_REMATCH_TTL", default_value = "10m", value_parser = parse_duration)]
    pub rematch_ttl: Duration,
    /// Games whose last committed state this instance keeps in memory for their next
    /// action, saving a read and a decode per move (0 turns it off). Every write is still a
    /// compare-and-set on the stored version, so several instances stay correct.
    #[arg(long, env = "FRONTIER_STATE_CACHE", default_value_t = crate::cache::DEFAULT_CAPACITY)]
    pub state_cache: usize,
    /// The storage format games are written in (all three are read): 1, which every
    /// earlier release reads; 2, where a game's move records are a list of their own and a
    /// move appends one instead of rewriting the whole game (a move then costs the same at
    /// ply 400 as at ply 20); or 3, where the records and the log are fields of the game's
    /// own hash (a move's write is two Redis calls, not four). Format 3 is for new games: a
    /// game begun in a list goes on in format 2, and a game in format 3 stays in it. Write
    /// a format only once every game-session instance runs a release that reads it: an
    /// earlier release refuses a game in a newer format (`unavailable`) rather than rewrite
    /// what it cannot read. The next release writes 2 by default.
    #[arg(
        long,
        env = "FRONTIER_STORAGE_FORMAT",
        default_value_t = crate::storage::DEFAULT_FORMAT,
        value_parser = clap::value_parser!(u32).range(1..=3)
    )]
    pub storage_format: u32,
    /// Where game events carry their metadata on NATS (version, publication time, end of
    /// game): `headers`, which every release's gateway reads, or `payload`, a fixed
    /// envelope in front of the frame, cheaper to write and to read, which gateways of
    /// this release and later read. Set `payload` only once every gateway runs this
    /// release or a later one: an earlier gateway would pass the envelope's bytes on to its
    /// clients. The next release writes `payload` by default.
    #[arg(
        long,
        env = "FRONTIER_EVENT_METADATA",
        value_enum,
        default_value_t = EventMetadata::Headers
    )]
    pub event_metadata: EventMetadata,
    /// Test-only settings: present only in builds with the `test-hooks` feature, which
    /// release builds and images never enable (without it these flags do not exist, and a
    /// `FRONTIER_TEST_…` hook variable stops the service at start).
    #[command(flatten)]
    pub test: TestHooks,
}

/// Settings that exist only for tests (the `test-hooks` feature).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TestHooks {
    /// TEST ONLY: give every hidden game this layout (canonical form, e.g.
    /// `RNBQBNRPPPPPPPP/rnbqbnrpppppppp`): it makes the shuffle known in advance.
    #[cfg(feature = "test-hooks")]
    #[arg(
        long = "test-fixed-layout",
        env = "FRONTIER_TEST_FIXED_LAYOUT",
        hide = true
    )]
    pub fixed_layout: Option<String>,
    /// TEST ONLY: the length of one clock "minute" (production: 60s), for short clocks.
    #[cfg(feature = "test-hooks")]
    #[arg(long = "test-clock-minute", env = "FRONTIER_TEST_CLOCK_MINUTE", hide = true, value_parser = parse_duration)]
    pub clock_minute: Option<Duration>,
    /// TEST ONLY: start every new board of a variant from this position instead of the
    /// usual one, written `standard:FEN` or `atomic:FEN` (repeatable).
    #[cfg(feature = "test-hooks")]
    #[arg(long = "test-start-fen", env = "FRONTIER_TEST_START_FEN", hide = true)]
    pub start_fen: Vec<String>,
}

/// Whether this build has the test hooks (the `test-hooks` feature).
pub const TEST_HOOKS_BUILT: bool = cfg!(feature = "test-hooks");

/// The environment variables of the test hooks: a build without `test-hooks` refuses to
/// start when one is set, rather than ignore it.
pub const TEST_HOOK_VARIABLES: &[&str] = &[
    "FRONTIER_TEST_FIXED_LAYOUT",
    "FRONTIER_TEST_CLOCK_MINUTE",
    "FRONTIER_TEST_START_FEN",
];

impl TestHooks {
    /// The fixed layout, if set.
    pub fn fixed_layout(&self) -> Option<&str> {
        #[cfg(feature = "test-hooks")]
        return self.fixed_layout.as_deref();
        #[cfg(not(feature = "test-hooks"))]
        None
    }

    /// The length of a clock minute, if shortened.
    pub fn clock_minute(&self) -> Option<Duration> {
        #[cfg(feature = "test-hooks")]
        return self.clock_minute;
        #[cfg(not(feature = "test-hooks"))]
        None
    }

    /// The start positions, per variant.
    pub fn start_fens(&self) -> Result<Vec<(frontier_rules::Variant, String)>, String> {
        #[cfg(feature = "test-hooks")]
        return self.start_fen.iter().map(|s| parse_start_fen(s)).collect();
        #[cfg(not(feature = "test-hooks"))]
        Ok(Vec::new())
    }
}

/// Parses a `--test-start-fen` value: `standard:FEN` or `atomic:FEN`.
#[cfg(feature = "test-hooks")]
fn parse_start_fen(s: &str) -> Result<(frontier_rules::Variant, String), String> {
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
