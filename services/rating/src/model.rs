//! The rating service's domain, shared by every store: a finished game checked once
//! ([`CheckedGame`]), when a game is rated, the Glicko-2 update of both players
//! ([`rate_pair`]), a rating as of a given time ([`Standing::as_of`]), and the rows the
//! dashboard reads are made of. No I/O and no wire types (`scripts/check-layering.sh`):
//! the finished-game message becomes a [`CheckedGame`] in `store.rs`.

use frontier_glicko2::{INITIAL, PERIOD_HOURS, Rating, Score, rate_game};
use frontier_rules::Variant;
use time::OffsetDateTime;
use uuid::Uuid;

/// Why a finished game could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The record is not one the service can ever accept (missing player, bad id, unknown
    /// variant or result, a value the database's constraints refuse): retrying cannot help.
    #[error("invalid record: {0}")]
    Invalid(String),
    /// Storage failed (Postgres unreachable, a connection lost, a timeout): worth retrying.
    #[error("storage: {0}")]
    Storage(String),
}

/// What happened to one finished game.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// Stored (and rated, if it was rated).
    Stored {
        /// Ratings changed.
        rated: bool,
    },
    /// Already stored: nothing changed.
    Duplicate,
}

/// How a game ended, for the players.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GameResult {
    /// White won.
    White,
    /// Black won.
    Black,
    /// Drawn.
    Draw,
    /// Aborted after both joined: stored, never rated, counted nowhere.
    Aborted,
}

impl GameResult {
    /// Parses the record's `result`.
    pub fn parse(s: &str) -> Option<GameResult> {
        match s {
            "white" => Some(GameResult::White),
            "black" => Some(GameResult::Black),
            "draw" => Some(GameResult::Draw),
            "aborted" => Some(GameResult::Aborted),
            _ => None,
        }
    }

    /// The scores of White and Black (an aborted game scores as a draw, but is never rated).
    fn scores(self) -> (Score, Score) {
        match self {
            GameResult::White => (Score::Win, Score::Loss),
            GameResult::Black => (Score::Loss, Score::Win),
            GameResult::Draw | GameResult::Aborted => (Score::Draw, Score::Draw),
        }
    }
}

/// A time from Unix milliseconds (out-of-range values become the epoch).
pub fn at(ms: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

/// Unix milliseconds of a time.
pub fn ms(t: OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

/// A finished game whose keys were checked: what every store needs to file and rate it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckedGame {
    /// The game id.
    pub id: Uuid,
    /// The variant.
    pub variant: Variant,
    /// White's player id.
    pub white: Uuid,
    /// Black's player id.
    pub black: Uuid,
    /// The result.
    pub result: GameResult,
    /// When it ended.
    pub ended: OffsetDateTime,
    /// Whether it changes ratings: a rated, not aborted game between two different
    /// registered players. (So only registered players ever have a rating row.)
    pub rateable: bool,
}

/// A player's stored rating in one variant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Standing {
    /// The rating as of the last rated game.
    pub rating: Rating,
    /// Rated games played.
    pub rated_games: u32,
    /// When the last rated game ended (`None`: never rated).
    pub last_rated_at: Option<OffsetDateTime>,
}

impl Default for Standing {
    fn default() -> Self {
        Standing {
            rating: INITIAL,
            rated_games: 0,
            last_rated_at: None,
        }
    }
}

impl Standing {
    /// Hours without a rated game between the last one and `when` (never negative).
    fn idle_hours(&self, when: OffsetDateTime) -> f64 {
        self.last_rated_at
            .map_or(0.0, |last| (when - last).as_seconds_f64().max(0.0) / 3600.0)
    }

    /// The rating as of `when`: RD grows with the time since the last rated game.
    pub fn as_of(&self, when: OffsetDateTime) -> Rating {
        self.rating
            .after_inactivity(self.idle_hours(when) / PERIOD_HOURS)
    }
}

/// Both players' new ratings after `game` (rateable), from their standings before it.
/// Each is rated against the opponent's rating as of the game's end.
pub fn rate_pair(game: &CheckedGame, white: &Standing, black: &Standing) -> (Rating, Rating) {
    let (w_score, b_score) = game.result.scores();
    let (w_idle, b_idle) = (white.idle_hours(game.ended), black.idle_hours(game.ended));
    let new_white = rate_game(white.rating, w_idle, black.as_of(game.ended), w_score);
    let new_black = rate_game(black.rating, b_idle, white.as_of(game.ended), b_score);
    (new_white, new_black)
}

/// A player's finished, non-aborted games in one variant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Games.
    pub games: u64,
    /// Won.
    pub wins: u64,
    /// Drawn.
    pub draws: u64,
    /// Lost.
    pub losses: u64,
}

/// One line of a player's game list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameLine {
    /// The game id.
    pub id: Uuid,
    /// The variant.
    pub variant: Variant,
    /// Rated or casual.
    pub rated: bool,
    /// White's id and recorded name.
    pub white: (Uuid, String),
    /// Black's id and recorded name.
    pub black: (Uuid, String),
    /// `white`, `black`, `draw` or `aborted`.
    pub result: String,
    /// The outcome code.
    pub outcome: String,
    /// When it ended.
    pub ended: OffsetDateTime,
}

/// The position of a game in a player's list, newest first: games strictly older than
/// this (by end time, then id) come after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    /// The end time.
    pub ended: OffsetDateTime,
    /// The game id.
    pub id: Uuid,
}

impl Cursor {
    /// The cursor just after `line`.
    pub fn after(line: &GameLine) -> Cursor {
        Cursor {
            ended: line.ended,
            id: line.id,
        }
    }

    /// Whether a game ending at `ended` with `id` comes after the cursor (newest first).
    pub fn precedes(&self, ended: OffsetDateTime, id: Uuid) -> bool {
        (ended, id) < (self.ended, self.id)
    }
}

/// The cursor's text form, `<ended ms>_<game id>`: what clients send back as `before`.
impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}_{}", ms(self.ended), self.id)
    }
}

/// A `before` value that is not a cursor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a cursor: {0:?}")]
pub struct ParseCursorError(pub String);

impl std::str::FromStr for Cursor {
    type Err = ParseCursorError;

    fn from_str(s: &str) -> Result<Cursor, ParseCursorError> {
        let bad = || ParseCursorError(s.chars().take(64).collect());
        let (t, id) = s.split_once('_').ok_or_else(bad)?;
        let t: i64 = t.parse().map_err(|_| bad())?;
        let id = Uuid::parse_str(id).map_err(|_| bad())?;
        let ended = OffsetDateTime::from_unix_timestamp_nanos(i128::from(t) * 1_000_000)
            .map_err(|_| bad())?;
        Ok(Cursor { ended, id })
    }
}

/// One point of a rating history.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HistoryPoint {
    /// The game that produced it.
    pub game_id: Uuid,
    /// Rating after the game.
    pub rating: f64,
    /// RD after the game.
    pub rd: f64,
    /// When the game ended.
    pub at: OffsetDateTime,
}

/// One line of a leaderboard.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaderLine {
    /// The player.
    pub player_id: Uuid,
    /// The name in the player's latest rated game of the variant.
    pub name: String,
    /// Stored rating.
    pub rating: f64,
    /// Stored RD.
    pub rd: f64,
    /// Rated games.
    pub rated_games: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_nonsense() {
        let c = Cursor {
            ended: at(1_796_026_306_123),
            id: Uuid::now_v7(),
        };
        assert_eq!(c.to_string().parse::<Cursor>(), Ok(c));
        for bad in ["", "nonsense", "12_x", "x_0193", "99999999999999999999_0"] {
            assert!(bad.parse::<Cursor>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_standing_grows_its_rd_with_idle_time_only() {
        let s = Standing {
            rating: Rating {
                rating: 1600.0,
                rd: 60.0,
                volatility: 0.06,
            },
            rated_games: 30,
            last_rated_at: Some(at(0)),
        };
        assert!((s.as_of(at(0)).rd - 60.0).abs() < 1e-9);
        assert!(s.as_of(at(30 * 24 * 3_600_000)).rd > 61.0);
        // Before the last rated game counts as no time at all.
        assert!((s.as_of(at(-3_600_000)).rd - 60.0).abs() < 1e-9);
        assert_eq!(Standing::default().as_of(at(1_000_000)), INITIAL);
    }
}
