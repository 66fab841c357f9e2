//! Fair-play analysis: finds the moves and games where a player may have used an engine.
//!
//! Pure: no I/O, no async. The fair-play service feeds it finished rated games
//! ([`GameInput`]) and keeps each player-game's [`GameSummary`]; [`aggregate`] turns a
//! player's last games into a [`Verdict`].
//!
//! # One game ([`analyse_game`])
//!
//! The game is replayed once with the rules library; before each ply the mover's position
//! is analysed by the project's engine (`frontier_engine::analyse`) at a fixed node budget,
//! every legal move scored. The played move's *loss* is the best score minus its score
//! (capped at 1 000 cp). Skipped, and so not counted: the opening (plies up to
//! [`Settings::skip_plies`]), positions with one legal move ([`Skip::OnlyMove`], still used
//! for the long-think signal) and decided ones (|best| ≥ [`Settings::decided_cp`]).
//!
//! **Hidden chess is analysed from the mover's own view at that moment**: the engine's
//! `SeatView` is built from the mover's audience-filtered view of the game (public position,
//! every public reveal so far, the identities *this mover* captured) — never from the
//! layout, which the replay needs only to make the recorded moves land as they did (see
//! [`Replay`]). A lucky guess about a hidden piece then costs nothing; only what the player
//! could know is held against them. Standard and atomic are analysed from the full position
//! with its repetition history.
//!
//! Per side ([`GameStats`]): top-1 match rate, average centipawn loss, share within
//! [`Settings::near_margin_cp`] of the best, and the move-time signals from the record's
//! `at_ms` (a move's think time is its `at_ms` minus the previous ply's; the first move of
//! each side, opening moves and moves in time trouble are left out): the coefficient of
//! variation of think time, the share of complex positions answered fast with the best move,
//! and the share of only-moves preceded by a long think. See the `game` constants for
//! *complex*, *fast* and *long*.
//!
//! # A player ([`aggregate`])
//!
//! See [`Thresholds`] and the `score` module docs: each signal against a threshold that
//! scales with the player's rating, a score 0..100 explained by its reasons, and a report
//! once enough games and moves are in and an engine signal is among the reasons.

mod game;
mod replay;
mod score;

use frontier_rules::Variant;

pub use game::{
    COMPLEX_ALTERNATIVES, COMPLEX_MARGIN_CP, COMPLEX_MIN_LEGAL, FAST_SHARE, LOSS_CAP_CP, MIN_TIMED,
    SLOW_ONLY_MOVE_MIN_MS, TIME_TROUBLE_MS, analyse_game,
};
pub use replay::Replay;
pub use score::{MIN_COMPLEX, MIN_ONLY_MOVES, Thresholds, aggregate};

/// A finished game as the record has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameInput {
    /// The variant.
    pub variant: Variant,
    /// The start position's FEN (hidden chess: the public view FEN); empty for the
    /// variant's start position.
    pub start_fen: String,
    /// Hidden chess: the layout's canonical string (ARCHITECTURE.md "Provably fair
    /// shuffle"), needed to replay the moves; never shown to the analysis of a move.
    pub initial_layout: Option<String>,
    /// Every ply, in order.
    pub moves: Vec<PlyInput>,
    /// The increment per move, milliseconds (0 when untimed).
    pub increment_ms: u64,
}

/// One ply of the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlyInput {
    /// The move in UCI (a completed hidden promotion with its letter).
    pub uci: String,
    /// When it was made, milliseconds since the game started.
    pub at_ms: u64,
    /// The mover's remaining time after the move, if the game is timed.
    pub clock_ms: Option<u64>,
}

/// How a game is analysed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// The engine's node budget per analysed position (deterministic).
    pub nodes: u64,
    /// Plies from the game's start that are opening and not analysed (16: each side's
    /// first 8 moves).
    pub skip_plies: u32,
    /// A position whose best score for the mover is at least this far from 0 (centipawns)
    /// is decided and not counted.
    pub decided_cp: i32,
    /// A move within this many centipawns of the best is *near best*.
    pub near_margin_cp: i32,
    /// Seeds the engine's sampling (hidden chess); with the budget it makes the analysis
    /// reproducible.
    pub seed: u64,
}

impl Default for Settings {
    /// 100 000 nodes, the first 16 plies skipped, decided at 1 000 cp, near best within
    /// 30 cp.
    ///
    /// Measured (`tests/cost.rs`, release, the engine at Hard's own budget against Easy):
    /// at 20 000 nodes the analysis is too shallow to agree with a stronger engine (top-1
    /// 0.59, average loss 22 cp, against Easy's 0.27 and 57 cp); at 100 000 nodes the
    /// engine side reads 0.77 and 8 cp, Easy 0.30 and 68 cp. An engine user's games are
    /// won early, so positions count until 1 000 cp (at 400 cp most of them were skipped
    /// as decided).
    fn default() -> Settings {
        Settings {
            nodes: 100_000,
            skip_plies: 16,
            decided_cp: 1_000,
            near_margin_cp: 30,
            seed: 0x00f0_11a7_0000_0027,
        }
    }
}

/// Why a move was not counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Skip {
    /// Within the opening plies.
    Opening,
    /// The only legal move.
    OnlyMove,
    /// The position was already decided (|best| ≥ `decided_cp`).
    Decided,
    /// The ply answers a pending promotion (a choice, not a move).
    PendingPromotion,
}

impl Skip {
    /// `opening`, `only_move`, `decided` or `pending_promotion`.
    pub fn as_str(self) -> &'static str {
        match self {
            Skip::Opening => "opening",
            Skip::OnlyMove => "only_move",
            Skip::Decided => "decided",
            Skip::PendingPromotion => "pending_promotion",
        }
    }
}

/// One ply of a side, analysed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveAnalysis {
    /// The ply (1-based).
    pub ply: u32,
    /// The move played, as recorded.
    pub played: String,
    /// The engine's best move in UCI (empty when not analysed: opening, pending promotion;
    /// the played move for an only-move).
    pub best: String,
    /// Best score minus the played move's score, centipawns, capped at 1 000.
    pub loss_cp: u32,
    /// Think time: this ply's `at_ms` minus the previous ply's (0 for the game's first
    /// ply).
    pub think_ms: u64,
    /// Legal moves in the position (0 when a promotion choice was pending).
    pub legal_moves: u32,
    /// Legal moves within `near_margin_cp` of the best, the best included.
    pub near_best: u32,
    /// Why the move is not counted, if it is not.
    pub skipped: Option<Skip>,
    /// The move drove suspicion: the engine's move in a complex position, the best move
    /// played fast in a complex position, or a long think before an only-move.
    pub flagged: bool,
    /// The best score for the mover, centipawns (0 when not analysed).
    pub best_cp: i32,
    /// The played move is the engine's best, or scores as well.
    pub top1: bool,
    /// At least [`COMPLEX_MIN_LEGAL`] legal moves and [`COMPLEX_ALTERNATIVES`] within
    /// [`COMPLEX_MARGIN_CP`] of the best.
    pub complex: bool,
    /// The think time counts for the time signals (not the side's first move, not the
    /// opening, not in time trouble).
    pub timed: bool,
}

impl MoveAnalysis {
    fn skipped(ply: u32, record: &PlyInput, skip: Skip, legal_moves: u32) -> MoveAnalysis {
        MoveAnalysis {
            ply,
            played: record.uci.clone(),
            best: String::new(),
            loss_cp: 0,
            think_ms: 0,
            legal_moves,
            near_best: 0,
            skipped: Some(skip),
            flagged: false,
            best_cp: 0,
            top1: false,
            complex: false,
            timed: false,
        }
    }
}

/// One side's game statistics. Rates are shares in 0..1 (0 when there is nothing to
/// count).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GameStats {
    /// Moves counted (not skipped).
    pub counted: u32,
    /// Share of counted moves that were the engine's best.
    pub top1: f64,
    /// Average centipawn loss over counted moves.
    pub acpl: f64,
    /// Share of counted moves within `near_margin_cp` of the best.
    pub near_best: f64,
    /// Coefficient of variation (σ/μ) of think time over the timed moves (0 with fewer
    /// than [`MIN_TIMED`]).
    pub think_cv: f64,
    /// Share of complex counted positions where the best move was played fast.
    pub fast_best_complex: f64,
    /// Share of timed only-moves preceded by a long think.
    pub slow_only_moves: f64,
    /// The game's suspicion score for this side, 0..100 (see [`aggregate`]).
    pub score: f64,
    /// Moves whose think time counts (0 when the record has no times).
    pub timed: u32,
    /// Complex counted positions with a think time (the denominator of
    /// `fast_best_complex`).
    pub complex: u32,
    /// Timed only-moves (the denominator of `slow_only_moves`).
    pub only_moves: u32,
}

/// Both sides' analysis of one game, per side.
#[derive(Debug, Clone, PartialEq)]
pub struct SideAnalysis {
    /// The side's plies, in order.
    pub moves: Vec<MoveAnalysis>,
    /// The side's statistics.
    pub stats: GameStats,
}

/// What the service keeps per player-game for [`aggregate`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GameSummary {
    /// The side's statistics in that game.
    pub stats: GameStats,
    /// The player's rating when the game was played.
    pub rating: f64,
}

/// A player's verdict over their last games.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// Suspicion, 0..100.
    pub score: f64,
    /// The signals past their thresholds, the heaviest first.
    pub reasons: Vec<Reason>,
    /// Whether the player goes to the moderation queue.
    pub report: bool,
    /// Games considered.
    pub games: u32,
}

/// One signal past its threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct Reason {
    /// `engine_agreement`, `low_centipawn_loss`, `near_best_share`, `steady_think_time`,
    /// `fast_best_in_complex` or `slow_only_moves`.
    pub code: &'static str,
    /// The player's value.
    pub value: f64,
    /// The threshold it crossed (rating-adjusted where the signal depends on rating).
    pub threshold: f64,
    /// A sentence for the moderator.
    pub detail: String,
}

/// Why a game cannot be analysed: the record is wrong, and retrying will not help.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnalysisError {
    /// The start FEN does not parse or is no position of the variant.
    #[error("bad start position: {0}")]
    BadFen(String),
    /// A hidden game with hidden pieces and no layout.
    #[error("a hidden game needs its initial layout")]
    MissingLayout,
    /// The layout string is not a layout (or does not fit the start position).
    #[error("bad layout: {0}")]
    BadLayout(String),
    /// A recorded move is not legal where it stands.
    #[error("ply {ply}: `{uci}` cannot be played: {reason}")]
    IllegalMove {
        /// The ply (1-based).
        ply: u32,
        /// The move as recorded.
        uci: String,
        /// Why.
        reason: String,
    },
    /// The mover's view cannot be accounted for (reveals and captures).
    #[error("ply {ply}: the mover's view is inconsistent: {reason}")]
    View {
        /// The ply (1-based).
        ply: u32,
        /// Why.
        reason: String,
    },
    /// The engine refused the position.
    #[error("ply {ply}: the engine cannot analyse the position: {reason}")]
    Engine {
        /// The ply (1-based).
        ply: u32,
        /// Why.
        reason: String,
    },
}
