//! One finished game analysed: every ply against the engine from its mover's view, then
//! each side's move-time signals and statistics.

use frontier_engine::{Analysis, analyse};
use frontier_rules::{ByColor, Color, UciMove};

use crate::replay::Replay;
use crate::score::game_score;
use crate::{AnalysisError, GameInput, GameStats, MoveAnalysis, Settings, SideAnalysis, Skip};

/// A position is *complex* when at least this many legal moves …
pub const COMPLEX_MIN_LEGAL: u32 = 10;
/// … and at least this many of them (the best included) score within
/// [`COMPLEX_MARGIN_CP`] of the best: several plausible moves, the best not obvious.
pub const COMPLEX_ALTERNATIVES: u32 = 3;
/// See [`COMPLEX_ALTERNATIVES`].
pub const COMPLEX_MARGIN_CP: i32 = 100;
/// A move is *fast* when its think time is at most this share of the side's median think
/// time in the game.
pub const FAST_SHARE: f64 = 0.5;
/// An only-move is a *long think* when its think time is at least the side's median think
/// time in the game and at least this many milliseconds.
pub const SLOW_ONLY_MOVE_MIN_MS: u64 = 1_000;
/// A move made with less than this on the mover's clock (or five increments, if more) is
/// in time trouble: its think time is left out of the time signals (everybody plays fast
/// then).
pub const TIME_TROUBLE_MS: u64 = 10_000;
/// Fewest timed moves for a think-time coefficient of variation.
pub const MIN_TIMED: u32 = 6;
/// The loss of a move is capped here (a blunder is a blunder).
pub const LOSS_CAP_CP: i32 = 1_000;

/// One ply before the side signals are known.
struct Ply {
    analysis: MoveAnalysis,
    mover: Color,
}

/// Analyses both sides of a finished game in one replay; each ply is analysed from its
/// mover's view only (see the crate docs).
pub fn analyse_game(
    input: &GameInput,
    settings: &Settings,
) -> Result<ByColor<SideAnalysis>, AnalysisError> {
    let mut replay = Replay::start(
        input.variant,
        &input.start_fen,
        input.initial_layout.as_deref(),
    )?;
    let mut plies: Vec<Ply> = Vec::with_capacity(input.moves.len());
    let mut previous_at: Option<u64> = None;
    for (i, record) in input.moves.iter().enumerate() {
        let ply = replay.ply() + 1;
        let mover = replay.mover();
        let think_ms = match previous_at {
            Some(prev) => record.at_ms.saturating_sub(prev),
            None => 0,
        };
        previous_at = Some(record.at_ms);
        // The first move of each side has no reliable think time (the game's start, the
        // first reply to it).
        let first_of_side = i < 2;
        let trouble = record
            .clock_ms
            .is_some_and(|left| left < TIME_TROUBLE_MS.max(5 * input.increment_ms));
        let mut analysis = if replay.promotion_pending() {
            MoveAnalysis::skipped(ply, record, Skip::PendingPromotion, 0)
        } else {
            let legal = replay.legal_move_count();
            if ply <= settings.skip_plies {
                MoveAnalysis::skipped(ply, record, Skip::Opening, legal)
            } else if legal == 1 {
                let mut only = MoveAnalysis::skipped(ply, record, Skip::OnlyMove, legal);
                only.best = record.uci.clone();
                only
            } else {
                analyse_ply(&replay, ply, record, settings)?
            }
        };
        analysis.think_ms = think_ms;
        analysis.timed = !first_of_side && !trouble && analysis.skipped != Some(Skip::Opening);
        plies.push(Ply { analysis, mover });
        replay.play(&record.uci)?;
    }
    Ok(ByColor::new_with(|color| {
        let moves: Vec<MoveAnalysis> = plies
            .iter()
            .filter(|p| p.mover == color)
            .map(|p| p.analysis.clone())
            .collect();
        side(moves, settings)
    }))
}

/// The engine's analysis of the mover's position before `record` is played.
fn analyse_ply(
    replay: &Replay,
    ply: u32,
    record: &crate::PlyInput,
    settings: &Settings,
) -> Result<MoveAnalysis, AnalysisError> {
    let view = replay.mover_view()?;
    let illegal = |reason: String| AnalysisError::IllegalMove {
        ply,
        uci: record.uci.clone(),
        reason,
    };
    let uci: UciMove = record.uci.parse().map_err(|e| illegal(format!("{e}")))?;
    let played = view
        .position
        .to_move(&uci)
        .map_err(|e| illegal(e.to_string()))?;
    let seed = settings
        .seed
        .wrapping_add(u64::from(ply).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let Analysis { moves, .. } =
        analyse(&view, settings.nodes, seed).map_err(|e| AnalysisError::Engine {
            ply,
            reason: e.to_string(),
        })?;
    let hidden_mover = view.position.hidden().contains(played.from());
    let same = |m: &frontier_rules::Move| {
        m.from() == played.from()
            && m.to() == played.to()
            && (hidden_mover || m.promotion() == played.promotion())
    };
    let (best, best_cp) = moves.first().copied().ok_or(AnalysisError::Engine {
        ply,
        reason: "no move analysed".into(),
    })?;
    let played_cp = moves
        .iter()
        .find(|(m, _)| same(m))
        .map(|&(_, s)| s)
        .ok_or_else(|| illegal("not among the engine's legal moves".into()))?;
    let loss = (best_cp - played_cp).clamp(0, LOSS_CAP_CP);
    let within = |margin: i32| moves.iter().filter(|(_, s)| *s >= best_cp - margin).count() as u32;
    let legal_moves = moves.len() as u32;
    let near_best = within(settings.near_margin_cp);
    let complex =
        legal_moves >= COMPLEX_MIN_LEGAL && within(COMPLEX_MARGIN_CP) >= COMPLEX_ALTERNATIVES;
    let skipped = (best_cp.abs() >= settings.decided_cp).then_some(Skip::Decided);
    Ok(MoveAnalysis {
        ply,
        played: record.uci.clone(),
        best: best.to_string(),
        loss_cp: loss as u32,
        think_ms: 0,
        legal_moves,
        near_best,
        skipped,
        flagged: false,
        best_cp,
        top1: same(&best) || loss == 0,
        complex,
        timed: false,
    })
}

/// One side's statistics and flags from its analysed moves.
fn side(mut moves: Vec<MoveAnalysis>, settings: &Settings) -> SideAnalysis {
    let mut times: Vec<u64> = moves
        .iter()
        .filter(|m| m.timed)
        .map(|m| m.think_ms)
        .collect();
    times.sort_unstable();
    let median = times.get(times.len() / 2).copied().unwrap_or(0) as f64;
    let fast =
        |m: &MoveAnalysis| m.timed && median > 0.0 && (m.think_ms as f64) <= FAST_SHARE * median;
    let slow = |m: &MoveAnalysis| {
        m.timed
            && median > 0.0
            && (m.think_ms as f64) >= median
            && m.think_ms >= SLOW_ONLY_MOVE_MIN_MS
    };
    let mut counted = 0u32;
    let (mut top1, mut loss, mut near) = (0u32, 0u64, 0u32);
    let (mut complex, mut fast_best) = (0u32, 0u32);
    let (mut only, mut slow_only) = (0u32, 0u32);
    for m in &mut moves {
        match m.skipped {
            None => {
                counted += 1;
                top1 += u32::from(m.top1);
                loss += u64::from(m.loss_cp);
                near += u32::from(m.loss_cp as i32 <= settings.near_margin_cp);
                if m.complex && m.timed {
                    complex += 1;
                    if m.top1 && fast(m) {
                        fast_best += 1;
                        m.flagged = true;
                    }
                }
                // The engine's move where close alternatives made it hard to find.
                if m.top1 && m.complex && m.loss_cp == 0 {
                    m.flagged = true;
                }
            }
            Some(Skip::OnlyMove) if m.timed => {
                only += 1;
                if slow(m) {
                    slow_only += 1;
                    m.flagged = true;
                }
            }
            _ => {}
        }
    }
    let share = |n: u32, d: u32| {
        if d == 0 {
            0.0
        } else {
            f64::from(n) / f64::from(d)
        }
    };
    let timed = times.len() as u32;
    let mean = if timed == 0 {
        0.0
    } else {
        times.iter().map(|&t| t as f64).sum::<f64>() / f64::from(timed)
    };
    let think_cv = if timed >= MIN_TIMED && mean > 0.0 {
        let var = times
            .iter()
            .map(|&t| (t as f64 - mean).powi(2))
            .sum::<f64>()
            / f64::from(timed);
        var.sqrt() / mean
    } else {
        0.0
    };
    let mut stats = GameStats {
        counted,
        top1: share(top1, counted),
        acpl: if counted == 0 {
            0.0
        } else {
            loss as f64 / f64::from(counted)
        },
        near_best: share(near, counted),
        think_cv,
        fast_best_complex: share(fast_best, complex),
        slow_only_moves: share(slow_only, only),
        score: 0.0,
        timed: if mean > 0.0 { timed } else { 0 },
        complex,
        only_moves: only,
    };
    stats.score = game_score(&stats);
    SideAnalysis { moves, stats }
}
