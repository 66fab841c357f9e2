//! Where finished games, ratings and rating history live: the [`RatingStore`] trait, with
//! [`PgStore`](crate::pg::PgStore) (Postgres, production) and
//! [`MemoryStore`](crate::memory::MemoryStore) (tests and the single-process mode). Both
//! check a game with [`CheckedGame`] and rate it with [`rate_pair`](crate::model::rate_pair),
//! so they behave the same: a game id seen before changes nothing.

use std::future::Future;

use frontier_proto::games::v1::FinishedGame;
use frontier_rules::Variant;
use uuid::Uuid;

use crate::model::{
    CheckedGame, Counts, Cursor, GameLine, HistoryPoint, LeaderLine, RecordError, Recorded,
    Standing,
};

/// A read failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Storage is unreachable or failed: worth retrying.
    #[error("storage: {0}")]
    Unavailable(String),
    /// A stored value does not read back (a bug or a hand-edited row).
    #[error("stored data: {0}")]
    Corrupt(String),
}

/// The rating service's storage.
pub trait RatingStore: Clone + Send + Sync + 'static {
    /// Stores a finished game once and, if [`CheckedGame::rateable`], rates both players
    /// and appends to their histories — all or nothing. A game id stored before changes
    /// nothing ([`Recorded::Duplicate`]). A record that fails validation is
    /// [`RecordError::Invalid`]; a storage failure is [`RecordError::Storage`].
    fn record_game(
        &self,
        game: &FinishedGame,
    ) -> impl Future<Output = Result<Recorded, RecordError>> + Send;

    /// A player's stored rating per variant (variants never rated are absent).
    fn standings(
        &self,
        player: Uuid,
    ) -> impl Future<Output = Result<Vec<(Variant, Standing)>, StoreError>> + Send;

    /// A player's game counts per variant (variants never played are absent).
    fn counts(
        &self,
        player: Uuid,
    ) -> impl Future<Output = Result<Vec<(Variant, Counts)>, StoreError>> + Send;

    /// Up to `limit` of a player's games (optionally of one variant) that come after
    /// `before`, newest first (by end time, then id).
    fn games(
        &self,
        player: Uuid,
        variant: Option<Variant>,
        before: Option<Cursor>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<GameLine>, StoreError>> + Send;

    /// A player's rating history in a variant, oldest first (by time, then game id).
    fn history(
        &self,
        player: Uuid,
        variant: Variant,
    ) -> impl Future<Output = Result<Vec<HistoryPoint>, StoreError>> + Send;

    /// Up to `limit` players with a stored RD of at most `max_rd` in `variant`, by rating
    /// (highest first), then player id.
    fn leaderboard(
        &self,
        variant: Variant,
        max_rd: f64,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<LeaderLine>, StoreError>> + Send;

    /// Those of `players` with at least one finished game, in the order given, each once.
    fn players_with_games(
        &self,
        players: &[Uuid],
    ) -> impl Future<Output = Result<Vec<Uuid>, StoreError>> + Send;

    /// A finished game's record as it was received.
    fn game(
        &self,
        id: Uuid,
    ) -> impl Future<Output = Result<Option<FinishedGame>, StoreError>> + Send;
}

/// `players` in order, each once, keeping those `keep` says yes to.
pub(crate) fn distinct_where(players: &[Uuid], keep: impl Fn(&Uuid) -> bool) -> Vec<Uuid> {
    let mut out: Vec<Uuid> = Vec::new();
    for p in players {
        if !out.contains(p) && keep(p) {
            out.push(*p);
        }
    }
    out
}

/// Checks a game before a store files it.
pub(crate) fn check(game: &FinishedGame) -> Result<CheckedGame, RecordError> {
    CheckedGame::try_from(game)
}
