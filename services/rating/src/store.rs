//! Where finished games, ratings and rating history live: the [`RatingStore`] trait, with
//! [`PgStore`](crate::pg::PgStore) (Postgres, production) and
//! [`MemoryStore`](crate::memory::MemoryStore) (tests and the single-process mode). Both
//! check a game with [`CheckedGame`] and rate it with [`rate_pair`](crate::model::rate_pair),
//! so they behave the same: a game id seen before changes nothing.

use std::future::Future;

use frontier_platform::convert::variant_from_proto;
use frontier_proto::games::v1::FinishedGame;
use frontier_rules::Variant;
use uuid::Uuid;

use crate::model::{
    CheckedGame, Counts, Cursor, GameLine, GameResult, HistoryPoint, LeaderLine, RecordError,
    Recorded, Standing, at,
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

fn invalid(what: &str) -> RecordError {
    RecordError::Invalid(what.to_owned())
}

impl TryFrom<&FinishedGame> for CheckedGame {
    type Error = RecordError;

    fn try_from(game: &FinishedGame) -> Result<CheckedGame, RecordError> {
        let id = Uuid::parse_str(&game.game_id).map_err(|_| invalid("game id is not a UUID"))?;
        let variant = variant_from_proto(game.variant).ok_or_else(|| invalid("unknown variant"))?;
        let (Some(white), Some(black)) = (&game.white, &game.black) else {
            return Err(invalid("a finished game has both players"));
        };
        let white_id = Uuid::parse_str(&white.id).map_err(|_| invalid("white id is not a UUID"))?;
        let black_id = Uuid::parse_str(&black.id).map_err(|_| invalid("black id is not a UUID"))?;
        let result = GameResult::parse(&game.result)
            .ok_or_else(|| invalid("result is white, black, draw or aborted"))?;
        // Stored as 32-bit integers (and far above any real clock).
        if let Some(tc) = game.time_control
            && (i32::try_from(tc.initial_seconds).is_err()
                || i32::try_from(tc.increment_seconds).is_err())
        {
            return Err(invalid("time control out of range"));
        }
        // A game with a computer player is never rated, whatever its record says (the flag,
        // or a bot's fixed id: defence in depth).
        let is_bot = |p: &frontier_proto::games::v1::Player, id: Uuid| {
            p.bot || frontier_platform::PlayerId(id).bot_level().is_some()
        };
        let rateable = game.rated
            && result != GameResult::Aborted
            && !white.guest
            && !black.guest
            && !is_bot(white, white_id)
            && !is_bot(black, black_id)
            && white_id != black_id;
        Ok(CheckedGame {
            id,
            variant,
            white: white_id,
            black: black_id,
            result,
            ended: at(game.ended_at_ms),
            rateable,
        })
    }
}

/// The protobuf bot level of a stored player: a bot's level follows from its fixed id (the
/// stores keep the bot flag, not a column for the level).
pub(crate) fn stored_bot_level(id: Uuid, bot: bool) -> i32 {
    frontier_platform::PlayerId(id)
        .bot_level()
        .filter(|_| bot)
        .map_or(frontier_proto::games::v1::BotLevel::Unspecified, |l| {
            frontier_platform::convert::bot_level_to_proto(l)
        }) as i32
}

/// Checks a game before a store files it.
pub(crate) fn check(game: &FinishedGame) -> Result<CheckedGame, RecordError> {
    CheckedGame::try_from(game)
}
