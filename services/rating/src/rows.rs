//! What the two SQL stores ([`PgStore`](crate::PgStore), [`SqliteStore`](crate::SqliteStore))
//! share: the shapes of the rows their queries return and how each becomes the model's
//! value. The stores differ only in SQL and in column types — a time is a `timestamptz`
//! on Postgres and Unix milliseconds on SQLite ([`Stamp`]); moves are `jsonb` or JSON
//! text — so each query stays in its store and each row's meaning is written once, here.

use frontier_proto::games::v1 as games;
use frontier_rules::Variant;
use serde_json::{Value, json};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::model::{Counts, GameLine, HistoryPoint, LeaderLine, Standing, at};
use crate::store::StoreError;

/// A stored time: a timestamp (Postgres) or Unix milliseconds (SQLite).
pub(crate) trait Stamp {
    /// The time it stands for.
    fn time(self) -> OffsetDateTime;
}

impl Stamp for OffsetDateTime {
    fn time(self) -> OffsetDateTime {
        self
    }
}

impl Stamp for i64 {
    fn time(self) -> OffsetDateTime {
        at(self)
    }
}

/// A variant by its stored name.
pub(crate) fn variant_of(name: &str) -> Result<Variant, StoreError> {
    frontier_platform::convert::variant_from_name(name)
        .ok_or_else(|| StoreError::Corrupt(format!("variant {name:?}")))
}

/// A stored count (never negative) as a count.
fn count(x: i64) -> u64 {
    u64::try_from(x).unwrap_or(0)
}

/// `variant, rating, rd, volatility, rated_games, last_rated_at` of `ratings`.
pub(crate) type StandingRow<T> = (String, f64, f64, f64, i32, Option<T>);

/// A rating row's columns (rating, rd, volatility, rated_games, last_rated_at) as a
/// [`Standing`].
pub(crate) fn standing<T: Stamp>(
    rating: f64,
    rd: f64,
    volatility: f64,
    rated_games: i32,
    last_rated_at: Option<T>,
) -> Standing {
    Standing {
        rating: frontier_glicko2::Rating {
            rating,
            rd,
            volatility,
        },
        rated_games: u32::try_from(rated_games).unwrap_or(0),
        last_rated_at: last_rated_at.map(Stamp::time),
    }
}

/// A player's standings, one per variant.
pub(crate) fn standings<T: Stamp>(
    rows: Vec<StandingRow<T>>,
) -> Result<Vec<(Variant, Standing)>, StoreError> {
    rows.into_iter()
        .map(|r| Ok((variant_of(&r.0)?, standing(r.1, r.2, r.3, r.4, r.5))))
        .collect()
}

/// `variant, games, wins, draws, losses` of a player's games, by variant.
pub(crate) type CountsRow = (String, i64, i64, i64, i64);

/// A player's counts of games, one per variant.
pub(crate) fn counts(rows: Vec<CountsRow>) -> Result<Vec<(Variant, Counts)>, StoreError> {
    rows.into_iter()
        .map(|r| {
            Ok((
                variant_of(&r.0)?,
                Counts {
                    games: count(r.1),
                    wins: count(r.2),
                    draws: count(r.3),
                    losses: count(r.4),
                },
            ))
        })
        .collect()
}

/// `id, variant, rated, white_id, white_name, black_id, black_name, result, outcome,
/// ended_at` of `games`.
pub(crate) type GameRow<T> = (
    Uuid,
    String,
    bool,
    Uuid,
    String,
    Uuid,
    String,
    String,
    String,
    T,
);

/// A page of a player's games.
pub(crate) fn game_lines<T: Stamp>(rows: Vec<GameRow<T>>) -> Result<Vec<GameLine>, StoreError> {
    rows.into_iter()
        .map(|r| {
            Ok(GameLine {
                id: r.0,
                variant: variant_of(&r.1)?,
                rated: r.2,
                white: (r.3, r.4),
                black: (r.5, r.6),
                result: r.7,
                outcome: r.8,
                ended: r.9.time(),
            })
        })
        .collect()
}

/// `game_id, rating, rd, at` of `rating_history`.
pub(crate) type HistoryRow<T> = (Uuid, f64, f64, T);

/// A player's rating history in one variant.
pub(crate) fn history<T: Stamp>(rows: Vec<HistoryRow<T>>) -> Vec<HistoryPoint> {
    rows.into_iter()
        .map(|r| HistoryPoint {
            game_id: r.0,
            rating: r.1,
            rd: r.2,
            at: r.3.time(),
        })
        .collect()
}

/// `player_id, name, rating, rd, rated_games` of the leaderboard query.
pub(crate) type LeaderRow = (Uuid, Option<String>, f64, f64, i32);

/// Leaderboard lines.
pub(crate) fn leaders(rows: Vec<LeaderRow>) -> Vec<LeaderLine> {
    rows.into_iter()
        .map(|r| LeaderLine {
            player_id: r.0,
            name: r.1.unwrap_or_default(),
            rating: r.2,
            rd: r.3,
            rated_games: u32::try_from(r.4).unwrap_or(0),
        })
        .collect()
}

/// A game's moves as stored (a JSON list).
pub(crate) fn moves_json(game: &games::FinishedGame) -> Value {
    Value::Array(
        game.moves
            .iter()
            .map(|m| {
                json!({
                    "ply": m.ply, "uci": m.uci,
                    "reveal_square": m.reveal_square, "reveal_role": m.reveal_role,
                    "captured_square": m.captured_square, "captured_role": m.captured_role,
                    "captured_was_hidden": m.captured_was_hidden,
                    "captured_identity": m.captured_identity, "at_ms": m.at_ms,
                    "clock_ms": m.clock_ms,
                })
            })
            .collect(),
    )
}

/// A game's stored moves read back.
pub(crate) fn moves_from_json(moves: &Value) -> Result<Vec<games::MoveRecord>, StoreError> {
    moves
        .as_array()
        .ok_or_else(|| StoreError::Corrupt("stored moves are not a list".into()))?
        .iter()
        .map(move_from_json)
        .collect()
}

fn move_from_json(m: &Value) -> Result<games::MoveRecord, StoreError> {
    let text = |k: &str| m[k].as_str().unwrap_or_default().to_owned();
    Ok(games::MoveRecord {
        ply: m["ply"]
            .as_u64()
            .and_then(|p| u32::try_from(p).ok())
            .ok_or_else(|| StoreError::Corrupt(format!("a stored move has no ply: {m}")))?,
        uci: text("uci"),
        reveal_square: text("reveal_square"),
        reveal_role: text("reveal_role"),
        captured_square: text("captured_square"),
        captured_role: text("captured_role"),
        captured_was_hidden: m["captured_was_hidden"].as_bool().unwrap_or(false),
        captured_identity: text("captured_identity"),
        at_ms: m["at_ms"].as_u64().unwrap_or(0),
        clock_ms: m["clock_ms"].as_u64(),
    })
}

/// One side of a stored game, as its columns read.
pub(crate) struct SideColumns {
    pub id: Uuid,
    pub name: String,
    pub guest: bool,
    pub bot: bool,
}

impl SideColumns {
    fn player(self) -> games::Player {
        games::Player {
            id: self.id.to_string(),
            name: self.name,
            guest: self.guest,
            bot: self.bot,
            bot_level: crate::store::stored_bot_level(self.id, self.bot),
        }
    }
}

/// A stored game's columns, read by a store in its own types and brought to these.
pub(crate) struct GameColumns {
    pub id: Uuid,
    pub variant: String,
    pub rated: bool,
    pub initial_seconds: Option<i64>,
    pub increment_seconds: Option<i64>,
    pub white: SideColumns,
    pub black: SideColumns,
    pub result: String,
    pub outcome: String,
    pub moves: Value,
    pub created_at_ms: i64,
    pub started_at_ms: i64,
    pub ended_at_ms: i64,
    pub start_fen: String,
    pub final_fen: String,
    pub initial_layout: String,
    pub salt: String,
    pub commitment: String,
}

impl GameColumns {
    /// The finished game these columns hold.
    pub(crate) fn finished(self) -> Result<games::FinishedGame, StoreError> {
        let variant = variant_of(&self.variant)?;
        let seconds = |s: Option<i64>| u32::try_from(s.unwrap_or(0)).unwrap_or(0);
        Ok(games::FinishedGame {
            game_id: self.id.to_string(),
            variant: frontier_platform::convert::variant_to_proto(variant).into(),
            rated: self.rated,
            time_control: self.initial_seconds.map(|i| games::TimeControl {
                initial_seconds: seconds(Some(i)),
                increment_seconds: seconds(self.increment_seconds),
            }),
            white: Some(self.white.player()),
            black: Some(self.black.player()),
            result: self.result,
            outcome: self.outcome,
            moves: moves_from_json(&self.moves)?,
            created_at_ms: self.created_at_ms,
            started_at_ms: self.started_at_ms,
            ended_at_ms: self.ended_at_ms,
            initial_layout: self.initial_layout,
            salt: self.salt,
            commitment: self.commitment,
            final_fen: self.final_fen,
            start_fen: self.start_fen,
        })
    }
}
