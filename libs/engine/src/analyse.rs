//! Analysis: the engine's own search of one seat's position at a fixed node budget, every
//! root move scored (what fair-play screening compares a played move against).
//!
//! Unlike [`crate::think`] nothing is chosen: no level, no imprecision, no time limit. The
//! same view, budget and seed give the same analysis on any machine. Hidden chess with
//! hidden pieces on the board is searched over layouts sampled from the view alone (as
//! `think` does); the view is all the analysis knows.

use frontier_rules::{Move, Variant};

use crate::eval::Evaluator;
use crate::level::Profile;
use crate::rng::Rng;
use crate::search::{Budget, MAX_DEPTH, Search};
use crate::tt::Table;
use crate::{SeatView, ThinkError, determinised};

/// Moves within this many centipawns of the best get exact scores; the others an upper
/// bound (at most `best − ANALYSIS_MARGIN`).
pub const ANALYSIS_MARGIN: i32 = 200;

/// Hidden chess: layouts sampled per analysed position (the budget is shared among them).
pub const ANALYSIS_SAMPLES: usize = 4;

/// log2 of the transposition table's entries for one analysis.
const ANALYSIS_TT_BITS: u32 = 16;

/// One position analysed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Analysis {
    /// Every legal root move with its score for the seat (centipawns), best first. Scores
    /// within [`ANALYSIS_MARGIN`] of the best are exact, the others upper bounds. Empty
    /// when the view has a pending promotion (a promotion choice is not analysed). Hidden
    /// chess: a hidden piece's move to its last rank is listed without a promotion.
    pub moves: Vec<(Move, i32)>,
    /// Nodes searched.
    pub nodes: u64,
    /// Deepest iteration completed for every root move (hidden chess: the shallowest over
    /// the samples).
    pub depth: u32,
}

impl Analysis {
    /// The best move and its score, if any move was analysed.
    pub fn best(&self) -> Option<(Move, i32)> {
        self.moves.first().copied()
    }
}

/// Analyses the seat's position from its view alone at a budget of `nodes` (all samples
/// together in hidden chess): every legal move scored, best first.
///
/// Refuses a view whose seat is not to act ([`ThinkError::NotToAct`]) or that has no
/// legal move ([`ThinkError::NoLegalMove`]). A view with a pending promotion gives an
/// analysis with no moves. A position with one legal move is still searched, so that its
/// score is known.
pub fn analyse(view: &SeatView, nodes: u64, seed: u64) -> Result<Analysis, ThinkError> {
    if view.position.turn() != view.seat {
        return Err(ThinkError::NotToAct);
    }
    if view.pending_promotion.is_some() {
        return Ok(Analysis {
            moves: Vec::new(),
            nodes: 0,
            depth: 0,
        });
    }
    let pos = &view.position;
    let moves = pos.legal_move_list();
    if moves.is_empty() {
        return Err(ThinkError::NoLegalMove);
    }
    let profile = Profile {
        nodes,
        time_cap: std::time::Duration::MAX,
        margin: ANALYSIS_MARGIN,
        temperature: 0.0,
        samples: ANALYSIS_SAMPLES,
        tt_bits: ANALYSIS_TT_BITS,
    };
    let budget = Budget {
        nodes: nodes.max(1),
        deadline: None,
    };
    let mut rng = Rng::new(seed ^ pos.key().rotate_left(17));
    let evaluator = Evaluator::new(pos.variant(), &view.unaccounted);
    let mut table = Table::new(profile.tt_bits);
    let (moves, depth, nodes) = if pos.variant() == Variant::Hidden && pos.hidden().nonempty() {
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
    Ok(Analysis {
        moves,
        nodes,
        depth,
    })
}
