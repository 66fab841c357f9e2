//! The computer player (the contract the bot-worker calls; the search behind it is
//! [`think`]).
//!
//! Input is one seat's view ([`SeatView`]) and nothing else: for hidden chess the public
//! position, the identities revealed so far and the identities this seat captured — never
//! the server's layout (RULES.md §2 "Hidden state"). No I/O, no async.

use std::str::FromStr;
use std::time::Instant;

use frontier_rules::{ByColor, Color, Move, Position, Role, Square, Variant};

/// How strong the computer plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    /// For beginners.
    Easy,
    /// For club players.
    Medium,
    /// As strong as this engine plays within its time.
    Hard,
}

impl Level {
    /// Every level, weakest first.
    pub const ALL: [Level; 3] = [Level::Easy, Level::Medium, Level::Hard];

    /// `easy`, `medium` or `hard`.
    pub fn name(self) -> &'static str {
        match self {
            Level::Easy => "easy",
            Level::Medium => "medium",
            Level::Hard => "hard",
        }
    }

    /// The label players see, e.g. `Easy`.
    pub fn label(self) -> &'static str {
        match self {
            Level::Easy => "Easy",
            Level::Medium => "Medium",
            Level::Hard => "Hard",
        }
    }
}

/// A level name that is not `easy`, `medium` or `hard`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown level `{0}`: expected easy, medium or hard")]
pub struct ParseLevelError(pub String);

impl FromStr for Level {
    type Err = ParseLevelError;
    fn from_str(s: &str) -> Result<Level, ParseLevelError> {
        match s {
            "easy" => Ok(Level::Easy),
            "medium" => Ok(Level::Medium),
            "hard" => Ok(Level::Hard),
            other => Err(ParseLevelError(other.to_owned())),
        }
    }
}

/// Counts of identities by role, indexed by `Role as usize` (pawn … queen; kings are never
/// hidden).
pub type RoleCounts = [u8; 5];

/// Everything one seat may know of a game: the only input of the computer player.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatView {
    /// The seat the computer plays.
    pub seat: Color,
    /// The public position (hidden chess: hidden pieces as their apparent roles). While a
    /// promotion is pending it shows the revealed pawn on its last rank, its mover to act.
    pub position: Position,
    /// The square of this seat's pawn awaiting its promotion choice.
    pub pending_promotion: Option<Square>,
    /// Repetition keys of the earlier positions since the last irreversible move, oldest
    /// first (may be empty: the search then cannot see repetitions before the root).
    pub history: Vec<u64>,
    /// Hidden chess: per side, the identities not yet accounted for — the side's fifteen
    /// non-king start identities minus every public reveal of that side and minus the
    /// identities of that side's hidden pieces this seat captured. The side's hidden pieces
    /// on the board take their identities from this pool (the pool may be larger: hidden
    /// pieces the other player captured took identities this seat never learnt).
    pub unaccounted: ByColor<RoleCounts>,
}

/// Why a view could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ViewError {
    /// More reveals or captures of a role than the side started with.
    #[error("the {color:?} side accounts for more {role:?}s than it started with")]
    Overcounted {
        /// The side.
        color: Color,
        /// The role.
        role: Role,
    },
    /// More hidden pieces on the board than identities left to give them.
    #[error("the {0:?} side has more hidden pieces than unaccounted identities")]
    TooManyHidden(Color),
}

/// The fifteen non-king identities each side starts with.
pub const START_IDENTITIES: RoleCounts = [8, 2, 2, 2, 1];

impl SeatView {
    /// A standard or atomic view: the position is all there is to know.
    pub fn open(seat: Color, position: Position, history: Vec<u64>) -> SeatView {
        SeatView {
            seat,
            position,
            pending_promotion: None,
            history,
            unaccounted: ByColor {
                white: [0; 5],
                black: [0; 5],
            },
        }
    }

    /// A hidden-chess view from the public facts: every reveal so far (the revealed piece's
    /// side and true role when it was revealed) and the identities `seat` learnt by
    /// capturing hidden pieces of the other side.
    pub fn hidden(
        seat: Color,
        position: Position,
        pending_promotion: Option<Square>,
        history: Vec<u64>,
        reveals: &[(Color, Role)],
        own_captures: &[Role],
    ) -> Result<SeatView, ViewError> {
        let mut unaccounted = ByColor {
            white: START_IDENTITIES,
            black: START_IDENTITIES,
        };
        let taken = reveals
            .iter()
            .copied()
            .chain(own_captures.iter().map(|&role| (!seat, role)));
        for (color, role) in taken {
            let slot = unaccounted
                .get_mut(color)
                .get_mut(role as usize)
                .filter(|n| **n > 0)
                .ok_or(ViewError::Overcounted { color, role })?;
            *slot -= 1;
        }
        for color in [Color::White, Color::Black] {
            let hidden = (position.hidden() & position.board().by_color(color)).count();
            let left: u32 = unaccounted.get(color).iter().map(|&n| u32::from(n)).sum();
            if hidden > left {
                return Err(ViewError::TooManyHidden(color));
            }
        }
        Ok(SeatView {
            seat,
            position,
            pending_promotion,
            history,
            unaccounted,
        })
    }

    /// The variant.
    pub fn variant(&self) -> Variant {
        self.position.variant()
    }
}

/// How much the search may spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// At most this many nodes (deterministic for a given seed).
    pub nodes: Option<u64>,
    /// Stop by this instant (the bot-worker's think-time cap).
    pub deadline: Option<Instant>,
}

/// The bot's clock, when the game has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockInfo {
    /// The bot's remaining time, milliseconds.
    pub remaining_ms: u64,
    /// The increment per move, milliseconds.
    pub increment_ms: u64,
}

/// One decision to make.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// What the seat knows.
    pub view: &'a SeatView,
    /// How strong to play.
    pub level: Level,
    /// The bot's clock, if the game is timed.
    pub clock: Option<ClockInfo>,
    /// Seeds every random choice (sampling, imprecision): same request, same answer.
    pub seed: u64,
    /// Overrides the level's own budget (tests and the ladder use node budgets).
    pub limits: Option<Limits>,
}

/// What the computer does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Plays this move (UCI through `Move`'s `Display`).
    Move(Move),
    /// Answers its pending promotion with this role.
    Promote(Role),
}

/// A decision and what it cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thought {
    /// The decision.
    pub decision: Decision,
    /// Nodes searched.
    pub nodes: u64,
    /// Deepest completed iteration.
    pub depth: u32,
    /// Score of the decision for the seat, centipawns.
    pub score: i32,
}

/// Why no decision could be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThinkError {
    /// It is not the seat's turn to act.
    #[error("it is not the computer's turn")]
    NotToAct,
    /// The position has no legal move (the game is over).
    #[error("no legal move")]
    NoLegalMove,
}

/// Decides the seat's action. Placeholder until the search lands: the first legal move.
pub fn think(request: &Request<'_>) -> Result<Thought, ThinkError> {
    let view = request.view;
    if view.position.turn() != view.seat {
        return Err(ThinkError::NotToAct);
    }
    if view.pending_promotion.is_some() {
        return Ok(Thought {
            decision: Decision::Promote(Role::Queen),
            nodes: 0,
            depth: 0,
            score: 0,
        });
    }
    let moves = view.position.legal_move_list();
    let first = moves.first().copied().ok_or(ThinkError::NoLegalMove)?;
    Ok(Thought {
        decision: Decision::Move(first),
        nodes: 1,
        depth: 0,
        score: 0,
    })
}
