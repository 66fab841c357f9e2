//! From a finished-game record to what the stores keep: which games are analysed (rated,
//! finished, between two registered people), the record as the analysis core's input, and
//! each side's result as a [`SideRecord`]. The analysis itself runs in
//! `frontier_fairplay::analyse_game` (pure, CPU-bound: the caller runs it on a blocking
//! thread).

use frontier_fairplay::{AnalysisError, GameInput, PlyInput, Settings, SideAnalysis};
use frontier_platform::convert::variant_from_proto;
use frontier_proto::games::v1 as games;
use frontier_rules::{ByColor, Color};
use uuid::Uuid;

use crate::model::{MoveRow, SideRecord};

/// Why a record is not analysed (acknowledged and counted, never retried).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Casual games are not screened.
    Casual,
    /// Aborted games have no play to judge.
    Aborted,
    /// A guest or a bot sits in it (never rated; checked all the same).
    NotTwoPeople,
}

impl Skip {
    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Skip::Casual => "casual",
            Skip::Aborted => "aborted",
            Skip::NotTwoPeople => "not_two_people",
        }
    }
}

/// A record that can never be analysed (terminated and counted).
#[derive(Debug, thiserror::Error)]
pub enum Invalid {
    /// A field the analysis needs is missing or malformed.
    #[error("bad record: {0}")]
    Field(&'static str),
    /// The moves do not replay.
    #[error("the moves do not replay: {0}")]
    Replay(#[from] AnalysisError),
}

/// A record worth analysing: both players' ids and what the analysis reads.
#[derive(Debug)]
pub struct Eligible {
    /// The game.
    pub game_id: Uuid,
    /// The players, by colour: id and name.
    pub players: ByColor<(Uuid, String)>,
    /// The analysis input.
    pub input: GameInput,
    /// `white`, `black` or `draw`.
    pub result: String,
    /// Unix ms.
    pub ended_at_ms: i64,
}

impl Eligible {
    /// The variant.
    pub fn variant(&self) -> frontier_rules::Variant {
        self.input.variant
    }
}

fn person(player: Option<&games::Player>) -> Result<Option<(Uuid, String)>, Invalid> {
    let player = player.ok_or(Invalid::Field("player"))?;
    if player.bot || player.guest {
        return Ok(None);
    }
    let id = Uuid::parse_str(&player.id).map_err(|_| Invalid::Field("player id"))?;
    Ok(Some((id, player.name.clone())))
}

/// Decides whether a record is analysed, and reads it into the analysis input.
pub fn eligible(game: &games::FinishedGame) -> Result<Result<Eligible, Skip>, Invalid> {
    let game_id = Uuid::parse_str(&game.game_id).map_err(|_| Invalid::Field("game id"))?;
    let variant = variant_from_proto(game.variant).ok_or(Invalid::Field("variant"))?;
    if !game.rated {
        return Ok(Err(Skip::Casual));
    }
    if game.result == "aborted" {
        return Ok(Err(Skip::Aborted));
    }
    if !matches!(game.result.as_str(), "white" | "black" | "draw") {
        return Err(Invalid::Field("result"));
    }
    let (Some(white), Some(black)) = (person(game.white.as_ref())?, person(game.black.as_ref())?)
    else {
        return Ok(Err(Skip::NotTwoPeople));
    };
    let moves = game
        .moves
        .iter()
        .map(|m| PlyInput {
            uci: m.uci.clone(),
            at_ms: m.at_ms,
            clock_ms: m.clock_ms,
        })
        .collect();
    let input = GameInput {
        variant,
        start_fen: game.start_fen.clone(),
        initial_layout: (!game.initial_layout.is_empty()).then(|| game.initial_layout.clone()),
        moves,
        increment_ms: game
            .time_control
            .map_or(0, |tc| u64::from(tc.increment_seconds) * 1000),
    };
    Ok(Ok(Eligible {
        game_id,
        players: ByColor { white, black },
        input,
        result: game.result.clone(),
        ended_at_ms: game.ended_at_ms,
    }))
}

/// Analyses both sides (CPU-bound: call it on a blocking thread).
pub fn analyse(game: &Eligible, settings: &Settings) -> Result<ByColor<SideAnalysis>, Invalid> {
    Ok(frontier_fairplay::analyse_game(&game.input, settings)?)
}

/// Both sides' records, with each player's rating in the variant.
pub fn sides(
    game: &Eligible,
    analysis: &ByColor<SideAnalysis>,
    ratings: ByColor<f64>,
) -> Vec<SideRecord> {
    [Color::White, Color::Black]
        .into_iter()
        .map(|color| {
            let (id, name) = game.players.get(color).clone();
            let (_, opponent) = game.players.get(!color).clone();
            let side = analysis.get(color);
            SideRecord {
                game_id: game.game_id,
                player_id: id,
                player_name: name,
                variant: game.variant(),
                color: match color {
                    Color::White => "white",
                    Color::Black => "black",
                },
                opponent_name: opponent,
                result: game.result.clone(),
                rating: *ratings.get(color),
                ended_at_ms: game.ended_at_ms,
                stats: side.stats,
                moves: side.moves.iter().map(MoveRow::from).collect(),
            }
        })
        .collect()
}
