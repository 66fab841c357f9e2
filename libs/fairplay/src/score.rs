//! From statistics to a suspicion score: one game's score and a player's verdict over
//! their last games, with the rating as context.
//!
//! # The score
//!
//! Each signal gives a part `s` in 0..1 that is ½ exactly at its threshold and moves
//! linearly across a band on either side (`s = clamp(½ + (value − threshold) / (2·band))`,
//! reversed for the signals where *low* is suspicious: centipawn loss and think-time
//! variation). The score is `100 · Σ wᵢ·sᵢ / Σ wᵢ` over the signals that have data:
//!
//! | code                  | signal                                             | weight | suspicious | band |
//! |-----------------------|----------------------------------------------------|--------|------------|------|
//! | `engine_agreement`    | top-1 match rate                                   | 30     | high       | 0.15 |
//! | `low_centipawn_loss`  | average centipawn loss                             | 25     | low        | 15   |
//! | `near_best_share`     | share of moves within the near margin of the best  | 15     | high       | 0.15 |
//! | `steady_think_time`   | coefficient of variation of think time             | 10     | low        | 0.2  |
//! | `fast_best_in_complex`| share of complex positions answered fast and best  | 12     | high       | 0.3  |
//! | `slow_only_moves`     | share of only-moves preceded by a long think       | 8      | high       | 0.4  |
//!
//! The time signals count only with enough data ([`MIN_TIMED`] timed moves per game for the
//! variation, [`MIN_COMPLEX`] complex positions, [`MIN_ONLY_MOVES`] only-moves).
//!
//! # Rating as context
//!
//! A stronger player is expected to agree with the engine more. With
//! `d = clamp((rating − reference_rating) / 100, −10, 15)`:
//!
//! - top-1 threshold = `clamp(top1 + d · top1_per_100, 0.35, 0.95)`
//! - near-best threshold = `clamp(near_best + d · near_best_per_100, 0.40, 0.98)`
//! - centipawn-loss threshold = `clamp(acpl − d · acpl_per_100, 3, 80)`
//!
//! so the same statistics score lower (or equal) for a higher-rated player. The time
//! thresholds do not depend on the rating.

use crate::game::MIN_TIMED;
use crate::{GameStats, GameSummary, Reason, Verdict};

/// Fewest complex positions (over the games scored) for the fast-best signal.
pub const MIN_COMPLEX: u32 = 5;
/// Fewest timed only-moves (over the games scored) for the long-think signal.
pub const MIN_ONLY_MOVES: u32 = 3;

/// Where suspicion starts, and when it becomes a report. See the module docs for how
/// each threshold enters the score.
#[derive(Debug, Clone, PartialEq)]
pub struct Thresholds {
    /// Fewest games before a verdict may report.
    pub min_games: u32,
    /// Fewest counted moves (over those games) before a verdict may report. An engine
    /// user's games are decided early (few counted moves each): 50 over the window.
    pub min_counted: u32,
    /// A verdict reports at this score or above (0..100) — and only with an engine
    /// signal (`engine_agreement` or `low_centipawn_loss`) among its reasons: time alone
    /// never reports.
    pub report_score: f64,
    /// The rating the base thresholds are for.
    pub reference_rating: f64,
    /// Top-1 match rate threshold at the reference rating.
    pub top1: f64,
    /// Added to the top-1 threshold per 100 rating points above the reference.
    pub top1_per_100: f64,
    /// Average centipawn loss threshold at the reference rating (below is suspicious).
    pub acpl: f64,
    /// Taken from the centipawn-loss threshold per 100 rating points above the reference.
    pub acpl_per_100: f64,
    /// Near-best share threshold at the reference rating.
    pub near_best: f64,
    /// Added to the near-best threshold per 100 rating points above the reference.
    pub near_best_per_100: f64,
    /// Coefficient of variation of think time (below is suspicious).
    pub think_cv: f64,
    /// Share of complex positions answered fast with the best move.
    pub fast_best_complex: f64,
    /// Share of only-moves preceded by a long think.
    pub slow_only_moves: f64,
}

impl Default for Thresholds {
    /// Calibrated on in-process engine games (`tests/cost.rs`, `tests/separation.rs`): the
    /// engine's Easy level stands in for a club player, Hard for an engine user. At the
    /// default settings Easy's games score 0–40 and Hard's mostly 65–80.
    fn default() -> Thresholds {
        Thresholds {
            min_games: 5,
            min_counted: 50,
            report_score: 65.0,
            reference_rating: 1500.0,
            top1: 0.60,
            top1_per_100: 0.015,
            acpl: 30.0,
            acpl_per_100: 1.5,
            near_best: 0.65,
            near_best_per_100: 0.012,
            think_cv: 0.35,
            fast_best_complex: 0.5,
            slow_only_moves: 0.5,
        }
    }
}

/// The rating-adjusted thresholds.
#[derive(Debug, Clone, Copy)]
struct Adjusted {
    top1: f64,
    acpl: f64,
    near_best: f64,
}

impl Thresholds {
    fn adjusted(&self, rating: f64) -> Adjusted {
        let rating = if rating.is_finite() {
            rating
        } else {
            self.reference_rating
        };
        let d = ((rating - self.reference_rating) / 100.0).clamp(-10.0, 15.0);
        Adjusted {
            top1: (self.top1 + d * self.top1_per_100).clamp(0.35, 0.95),
            acpl: (self.acpl - d * self.acpl_per_100).clamp(3.0, 80.0),
            near_best: (self.near_best + d * self.near_best_per_100).clamp(0.40, 0.98),
        }
    }
}

/// Pooled statistics over one or more games.
#[derive(Debug, Clone, Copy, Default)]
struct Pooled {
    counted: u32,
    top1: f64,
    acpl: f64,
    near_best: f64,
    /// None without enough timed moves.
    think_cv: Option<f64>,
    complex: u32,
    fast_best_complex: f64,
    only_moves: u32,
    slow_only_moves: f64,
}

fn pool<'a>(stats: impl Iterator<Item = &'a GameStats>) -> Pooled {
    let mut p = Pooled::default();
    let (mut top1, mut acpl, mut near) = (0.0, 0.0, 0.0);
    let (mut cv_sum, mut cv_games) = (0.0, 0u32);
    let (mut fast, mut slow) = (0.0, 0.0);
    for s in stats {
        let n = f64::from(s.counted);
        p.counted += s.counted;
        top1 += s.top1 * n;
        acpl += s.acpl * n;
        near += s.near_best * n;
        if s.timed >= MIN_TIMED {
            cv_sum += s.think_cv;
            cv_games += 1;
        }
        p.complex += s.complex;
        fast += s.fast_best_complex * f64::from(s.complex);
        p.only_moves += s.only_moves;
        slow += s.slow_only_moves * f64::from(s.only_moves);
    }
    let per = |x: f64, n: u32| if n == 0 { 0.0 } else { x / f64::from(n) };
    p.top1 = per(top1, p.counted);
    p.acpl = per(acpl, p.counted);
    p.near_best = per(near, p.counted);
    p.think_cv = (cv_games > 0).then(|| per(cv_sum, cv_games));
    p.fast_best_complex = per(fast, p.complex);
    p.slow_only_moves = per(slow, p.only_moves);
    p
}

/// One signal's part of the score.
struct Part {
    code: &'static str,
    weight: f64,
    value: f64,
    threshold: f64,
    /// ½ at the threshold.
    s: f64,
    detail: String,
}

fn part(
    code: &'static str,
    weight: f64,
    value: f64,
    threshold: f64,
    band: f64,
    high_is_suspicious: bool,
    detail: String,
) -> Part {
    let delta = if high_is_suspicious {
        value - threshold
    } else {
        threshold - value
    };
    Part {
        code,
        weight,
        value,
        threshold,
        s: (0.5 + delta / (2.0 * band)).clamp(0.0, 1.0),
        detail,
    }
}

fn parts(p: &Pooled, t: &Thresholds, rating: f64) -> Vec<Part> {
    if p.counted == 0 {
        return Vec::new();
    }
    let a = t.adjusted(rating);
    let n = p.counted;
    let mut out = vec![
        part(
            "engine_agreement",
            30.0,
            p.top1,
            a.top1,
            0.15,
            true,
            format!(
                "played the engine's move in {:.0}% of {n} moves (threshold {:.0}% at rating {rating:.0})",
                100.0 * p.top1,
                100.0 * a.top1
            ),
        ),
        part(
            "low_centipawn_loss",
            25.0,
            p.acpl,
            a.acpl,
            15.0,
            false,
            format!(
                "average loss {:.1} cp over {n} moves (threshold {:.1} cp at rating {rating:.0})",
                p.acpl, a.acpl
            ),
        ),
        part(
            "near_best_share",
            15.0,
            p.near_best,
            a.near_best,
            0.15,
            true,
            format!(
                "{:.0}% of {n} moves within the near margin of the best (threshold {:.0}%)",
                100.0 * p.near_best,
                100.0 * a.near_best
            ),
        ),
    ];
    if let Some(cv) = p.think_cv {
        out.push(part(
            "steady_think_time",
            10.0,
            cv,
            t.think_cv,
            0.2,
            false,
            format!(
                "think time varies by {:.2} of its mean (threshold {:.2}), whatever the position",
                cv, t.think_cv
            ),
        ));
    }
    if p.complex >= MIN_COMPLEX {
        out.push(part(
            "fast_best_in_complex",
            12.0,
            p.fast_best_complex,
            t.fast_best_complex,
            0.3,
            true,
            format!(
                "the best move played fast in {:.0}% of {} complex positions (threshold {:.0}%)",
                100.0 * p.fast_best_complex,
                p.complex,
                100.0 * t.fast_best_complex
            ),
        ));
    }
    if p.only_moves >= MIN_ONLY_MOVES {
        out.push(part(
            "slow_only_moves",
            8.0,
            p.slow_only_moves,
            t.slow_only_moves,
            0.4,
            true,
            format!(
                "a long think before {:.0}% of {} only-moves (threshold {:.0}%)",
                100.0 * p.slow_only_moves,
                p.only_moves,
                100.0 * t.slow_only_moves
            ),
        ));
    }
    out
}

fn score_of(parts: &[Part]) -> f64 {
    let total: f64 = parts.iter().map(|p| p.weight).sum();
    if total <= 0.0 {
        return 0.0;
    }
    100.0 * parts.iter().map(|p| p.weight * p.s).sum::<f64>() / total
}

/// One game's score (0..100): the verdict's formula on this game alone, at the default
/// thresholds and their reference rating.
pub(crate) fn game_score(stats: &GameStats) -> f64 {
    let t = Thresholds::default();
    score_of(&parts(
        &pool(std::iter::once(stats)),
        &t,
        t.reference_rating,
    ))
}

/// A player's verdict over their last games in one variant (the caller passes the newest
/// N, e.g. 10): statistics pooled over the games (rates weighted by counted moves), the
/// player's mean rating over them as context, the score with its reasons (the signals past
/// their thresholds, strongest first), and whether to report — only with at least
/// `min_games` games and `min_counted` counted moves, a score of at least `report_score`,
/// and an engine signal among the reasons.
pub fn aggregate(games: &[GameSummary], thresholds: &Thresholds) -> Verdict {
    let rated: Vec<f64> = games
        .iter()
        .map(|g| g.rating)
        .filter(|r| r.is_finite())
        .collect();
    let rating = if rated.is_empty() {
        thresholds.reference_rating
    } else {
        rated.iter().sum::<f64>() / rated.len() as f64
    };
    let pooled = pool(games.iter().map(|g| &g.stats));
    let parts = parts(&pooled, thresholds, rating);
    let score = score_of(&parts);
    let mut crossed: Vec<&Part> = parts.iter().filter(|p| p.s > 0.5).collect();
    crossed.sort_by(|a, b| (b.weight * b.s).total_cmp(&(a.weight * a.s)));
    let reasons: Vec<Reason> = crossed
        .into_iter()
        .map(|p| Reason {
            code: p.code,
            value: p.value,
            threshold: p.threshold,
            detail: p.detail.clone(),
        })
        .collect();
    let engine_signal = reasons
        .iter()
        .any(|r| r.code == "engine_agreement" || r.code == "low_centipawn_loss");
    let games_n = games.len() as u32;
    let report = games_n >= thresholds.min_games
        && pooled.counted >= thresholds.min_counted
        && score >= thresholds.report_score
        && engine_signal;
    Verdict {
        score,
        reasons,
        report,
        games: games_n,
    }
}
