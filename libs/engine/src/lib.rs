//! The computer player (the contract the bot-worker calls; the search behind it is
//! [`think`]).
//!
//! Input is one seat's view ([`SeatView`]) and nothing else: for hidden chess the public
//! position, the identities revealed so far and the identities this seat captured — never
//! the server's layout (RULES.md §2 "Hidden state"). No I/O, no async.
//!
//! # How it plays
//!
//! - **Search** (`search`): iterative-deepening principal variation search over
//!   `frontier_rules::Position` (copy-make, nothing allocated per node), a transposition
//!   table keyed by the Zobrist key, quiescence search, check extension, late move
//!   reductions, and ordering by TT move, MVV-LVA (atomic: the explosion's gain), killers
//!   and history.
//! - **Evaluation** (`eval`): per variant — see that module.
//! - **Hidden chess** (`hidden`): the engine samples layouts consistent with the view,
//!   searches each with an equal share of the budget, and plays the move with the best
//!   aggregate (mean over samples, pulled a quarter of the way towards the worst sample).
//!   Its own hidden pieces are as unknown to it as the opponent's.
//!
//! # Levels
//!
//! | level  | node budget                 | time cap | imprecision                                        |
//! |--------|-----------------------------|----------|----------------------------------------------------|
//! | Easy   | 3 000 (atomic 1 000, hidden 1 500)        | 0.15 s   | seeded softmax, T = 60 cp, over moves ≤ 150 cp from the best (atomic, hidden: T = 80, ≤ 200 cp) |
//! | Medium | 40 000 (hidden 6 000)      | 0.8 s    | seeded softmax, T = 12 cp, over moves ≤ 30 cp from the best (hidden: T = 30, ≤ 80 cp)  |
//! | Hard   | 400 000 (hidden 500 000)    | 2.5 s    | none                                               |
//!
//! Hidden chess samples 2, 3 and 6 layouts at the three levels. The figures were tuned
//! with the ladder (`make ladder`, docs/benchmarks.md) until each level met its target.
//! The node budget is the primary limit (same request and seed, same decision, on any
//! machine); the time cap only guards a busy machine. With a clock, a decision never takes
//! more than [`fair_share`]: remaining/30 + increment/2, at most a third of the remaining
//! time.
//! [`Request::limits`] replaces the level's budget (tests and the ladder use node budgets).
//! A forced mate is always played, at every level.
//!
//! # Analysis
//!
//! [`analyse`] is the same search without a level: every legal move of the seat's view
//! scored at a fixed node budget (fair-play screening compares played moves against it).

mod analyse;
mod eval;
mod hidden;
mod level;
mod promote;
mod rng;
mod search;
mod tt;

use std::str::FromStr;
use std::time::Instant;

use frontier_rules::{ByColor, Color, Move, MoveKind, Position, Role, Square, UciMove, Variant};

pub use analyse::{ANALYSIS_MARGIN, ANALYSIS_SAMPLES, Analysis, analyse};
pub use level::{fair_share, time_allocation};

use crate::eval::Evaluator;
use crate::level::Profile;
use crate::rng::Rng;
use crate::search::{Budget, MAX_DEPTH, RootResult, Search};
use crate::tt::Table;

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

/// Decides the seat's action from its view alone: the move to play, or the answer to its
/// pending promotion.
///
/// Standard and atomic: one iterative-deepening search. Hidden: the budget is shared over
/// several layouts sampled from the view, and the move with the best aggregate score (mean
/// over the samples, a quarter weighted towards the worst sample) is chosen. The level then
/// picks among the near-best moves (see the `level` module). The same request and seed
/// give the same decision when the budget is a node budget.
pub fn think(request: &Request<'_>) -> Result<Thought, ThinkError> {
    let view = request.view;
    if view.position.turn() != view.seat {
        return Err(ThinkError::NotToAct);
    }
    if view.pending_promotion.is_some() {
        return Ok(promote::answer(view));
    }
    let pos = &view.position;
    let moves = pos.legal_move_list();
    if moves.is_empty() {
        return Err(ThinkError::NoLegalMove);
    }
    if let [only] = moves.as_slice() {
        // Nothing to choose: answer at once, leaving the clock alone.
        return Ok(Thought {
            decision: Decision::Move(with_advance_promotion(pos, *only)),
            nodes: 0,
            depth: 0,
            score: 0,
        });
    }
    let profile = request.level.profile(pos.variant());
    let budget = budget_of(request, &profile);
    let mut rng = Rng::new(request.seed ^ pos.key().rotate_left(17));
    let evaluator = Evaluator::new(pos.variant(), &view.unaccounted);
    let mut table = Table::new(profile.tt_bits);
    let (scored, depth, nodes) = if pos.variant() == Variant::Hidden && pos.hidden().nonempty() {
        determinised(
            view, &moves, &profile, budget, evaluator, &mut table, &mut rng,
        )
    } else {
        let mut search = Search::new(
            evaluator,
            pos.variant(),
            None,
            &mut table,
            0,
            budget,
            &view.history,
        );
        let result = search.run(pos, &moves, MAX_DEPTH, profile.margin);
        let scored = result.moves.iter().map(|rm| (rm.mv, rm.score)).collect();
        (scored, result.depth, result.nodes)
    };
    let pick = level::choose(&scored, &profile, &mut rng);
    let (mv, score) = scored.get(pick).copied().ok_or(ThinkError::NoLegalMove)?;
    Ok(Thought {
        decision: Decision::Move(with_advance_promotion(pos, mv)),
        nodes,
        depth,
        score,
    })
}

/// The search budget: `Request::limits` when given, else the level's nodes and time; a
/// clock caps the time at the fair share either way.
fn budget_of(request: &Request<'_>, profile: &Profile) -> Budget {
    let now = Instant::now();
    let clock_deadline = request
        .clock
        .map(|clock| now + time_allocation(request.level, Some(&clock)));
    let (nodes, deadline) = match request.limits {
        Some(limits) => (
            limits.nodes.unwrap_or(if limits.deadline.is_some() {
                u64::MAX
            } else {
                profile.nodes
            }),
            limits.deadline,
        ),
        None => (profile.nodes, Some(now + profile.time_cap)),
    };
    let deadline = match (deadline, clock_deadline) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Budget { nodes, deadline }
}

/// Hidden chess: searches `profile.samples` sampled worlds with an equal share of the
/// budget and aggregates each root move's scores.
fn determinised(
    view: &SeatView,
    moves: &frontier_rules::MoveList,
    profile: &Profile,
    budget: Budget,
    evaluator: Evaluator,
    table: &mut Table,
    rng: &mut Rng,
) -> (Vec<(Move, i32)>, u32, u64) {
    let samples = profile.samples.max(1);
    let start = Instant::now();
    let mut per_move: Vec<Vec<i32>> = vec![Vec::with_capacity(samples); moves.len()];
    let mut nodes = 0;
    let mut depth = u32::MAX;
    // Moves within this margin of a sample's best get exact scores in that sample.
    let margin = profile.margin.max(120);
    for i in 0..samples {
        let Some(layout) = hidden::sample(view, rng) else {
            continue;
        };
        let share = Budget {
            nodes: (budget.nodes / samples as u64).max(1),
            deadline: budget.deadline.map(|d| {
                let total = d.saturating_duration_since(start);
                start + total.mul_f64((i + 1) as f64 / samples as f64)
            }),
        };
        let salt = rng.next_u64();
        let mut search = Search::new(
            evaluator,
            Variant::Hidden,
            Some(&layout),
            table,
            salt,
            share,
            &view.history,
        );
        let result: RootResult = search.run(&view.position, moves, MAX_DEPTH, margin);
        nodes += result.nodes;
        depth = depth.min(result.depth);
        for rm in &result.moves {
            if let Some(k) = moves.iter().position(|m| *m == rm.mv) {
                per_move[k].push(rm.score);
            }
        }
    }
    let mut scored: Vec<(Move, i32)> = moves
        .iter()
        .zip(&per_move)
        .map(|(m, scores)| (*m, aggregate(scores)))
        .collect();
    scored.sort_by_key(|&(_, s)| -s);
    (scored, if depth == u32::MAX { 0 } else { depth }, nodes)
}

/// Mean over the samples, pulled a quarter of the way towards the worst one.
fn aggregate(scores: &[i32]) -> i32 {
    let Some(&worst) = scores.iter().min() else {
        return 0;
    };
    let mean = scores.iter().map(|&s| i64::from(s)).sum::<i64>() / scores.len() as i64;
    ((3 * mean + i64::from(worst)) / 4) as i32
}

/// A hidden piece moving to its last rank carries the choice "queen if it is a pawn" in
/// advance, so the game need not pause for it (RULES.md §2 "Promotion").
fn with_advance_promotion(pos: &Position, mv: Move) -> Move {
    let may_be_pawn = pos.hidden().contains(mv.from())
        && mv.kind() == MoveKind::Normal
        && mv.to().rank() == pos.turn().promotion_rank();
    if !may_be_pawn {
        return mv;
    }
    pos.to_move(&UciMove {
        from: mv.from(),
        to: mv.to(),
        promotion: Some(Role::Queen),
    })
    .unwrap_or(mv)
}
