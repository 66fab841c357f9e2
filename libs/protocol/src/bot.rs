//! The bot job: what game-session asks of a bot-worker. Internal (never sent to clients),
//! JSON on the JetStream work queue `<NS>_BOT_JOBS`, subject `<ns>.bot.jobs.<variant>`.
//!
//! **Invariant:** a job carries only what the bot's seat may know — its `view` is exactly
//! the game that seat's player would receive in a `game` frame (public position, reveals,
//! the identities this seat captured, clocks) — never the server's layout.

use serde::{Deserialize, Serialize};

use crate::GameWire;

/// One action a bot seat owes in a live game: its move, or its pending promotion choice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BotJob {
    /// `<game id>:<version>`: the JetStream message id (a repeat is dropped) and the
    /// action id the worker acts with (a job done twice applies once).
    pub job: String,
    /// The game.
    pub game_id: String,
    /// The version the bot acts on: the worker's `expected_version`.
    pub version: u64,
    /// The bot's player id (the one it acts as).
    pub player_id: String,
    /// `white` or `black`: the bot's seat.
    pub seat: String,
    /// `easy`, `medium` or `hard`.
    pub level: String,
    /// The game as the bot's seat sees it (its clocks included, read when the job was made).
    pub view: GameWire,
    /// When game-session made the job, Unix milliseconds (queue latency is measured from it).
    pub enqueued_at_ms: i64,
}

impl BotJob {
    /// The job id for a game at a version.
    pub fn id_for(game_id: &str, version: u64) -> String {
        format!("{game_id}:{version}")
    }
}
