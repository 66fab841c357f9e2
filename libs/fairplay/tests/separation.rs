//! An engine user and an honest player told apart, in-process: one side's moves chosen by
//! the engine at full strength (Hard: no imprecision), the other's by the engine's Easy
//! level (its seeded imprecision: a club player's errors). Both sides' think times come
//! from the same spread, so the separation here rests on the moves alone.
//!
//! Debug-build budgets: the engine, Easy and the analysis all at 3 000 nodes, games
//! stopped at 40 plies, the first 8 plies skipped as opening.

mod common;

use common::{LAYOUT, Player, in_parallel, play};
use frontier_engine::Level;
use frontier_fairplay::{GameStats, GameSummary, Settings, Thresholds, aggregate, analyse_game};
use frontier_rules::{Color, Variant};

const NODES: u64 = 3_000;
const PLIES: u32 = 40;
const GAMES: usize = 6;

fn settings() -> Settings {
    Settings {
        nodes: NODES,
        skip_plies: 8,
        ..Settings::default()
    }
}

/// Six games of at most 40 plies: the minimum to report is scaled down with them.
fn thresholds() -> Thresholds {
    Thresholds {
        min_games: GAMES as u32,
        min_counted: 50,
        ..Thresholds::default()
    }
}

fn pooled(stats: &[GameStats]) -> (f64, f64) {
    let n: u32 = stats.iter().map(|s| s.counted).sum();
    let top1 = stats
        .iter()
        .map(|s| s.top1 * f64::from(s.counted))
        .sum::<f64>()
        / f64::from(n);
    let acpl = stats
        .iter()
        .map(|s| s.acpl * f64::from(s.counted))
        .sum::<f64>()
        / f64::from(n);
    (top1, acpl)
}

#[test]
fn the_engine_side_is_reported_and_the_honest_side_is_not() {
    let games = in_parallel(GAMES, |i| {
        let engine_color = if i.is_multiple_of(2) {
            Color::White
        } else {
            Color::Black
        };
        let (white, black) = match engine_color {
            Color::White => (Player::Engine(NODES), Player::Honest(Level::Easy, NODES)),
            Color::Black => (Player::Honest(Level::Easy, NODES), Player::Engine(NODES)),
        };
        let (input, _) = play(Variant::Standard, None, white, black, 100 + i as u64, PLIES);
        let analysed = analyse_game(&input, &settings()).expect("a good record");
        (analysed[engine_color].stats, analysed[!engine_color].stats)
    });
    let engine: Vec<GameStats> = games.iter().map(|g| g.0).collect();
    let honest: Vec<GameStats> = games.iter().map(|g| g.1).collect();
    let (engine_top1, engine_acpl) = pooled(&engine);
    let (honest_top1, honest_acpl) = pooled(&honest);
    println!(
        "engine: top1 {engine_top1:.2}, acpl {engine_acpl:.1}; honest: top1 {honest_top1:.2}, acpl {honest_acpl:.1}"
    );
    assert!(
        engine_top1 >= honest_top1 + 0.3,
        "top-1: engine {engine_top1:.2}, honest {honest_top1:.2}"
    );
    assert!(
        engine_acpl < honest_acpl,
        "acpl: engine {engine_acpl:.1}, honest {honest_acpl:.1}"
    );
    let summaries = |stats: &[GameStats]| -> Vec<GameSummary> {
        stats
            .iter()
            .map(|&stats| GameSummary {
                stats,
                rating: 1500.0,
            })
            .collect()
    };
    let engine_verdict = aggregate(&summaries(&engine), &thresholds());
    let honest_verdict = aggregate(&summaries(&honest), &thresholds());
    println!("engine verdict: {engine_verdict:#?}\nhonest verdict: {honest_verdict:#?}");
    assert!(engine_verdict.report, "the engine side is reported");
    assert!(!honest_verdict.report, "the honest side is not reported");
    assert!(engine_verdict.score > honest_verdict.score + 30.0);
    assert!(
        engine_verdict
            .reasons
            .iter()
            .any(|r| r.code == "engine_agreement")
    );
    assert_eq!(engine_verdict.games, GAMES as u32);
}

#[test]
fn hidden_and_atomic_games_analyse_without_error() {
    for (variant, layout) in [(Variant::Hidden, Some(LAYOUT)), (Variant::Atomic, None)] {
        let (input, _) = play(
            variant,
            layout,
            Player::Engine(2_000),
            Player::Honest(Level::Easy, 1_000),
            7,
            30,
        );
        let analysed = analyse_game(
            &input,
            &Settings {
                nodes: 2_000,
                ..settings()
            },
        )
        .unwrap_or_else(|e| panic!("{variant}: {e}"));
        let plies = analysed.white.moves.len() + analysed.black.moves.len();
        assert_eq!(
            plies,
            input.moves.len(),
            "{variant}: every ply analysed once"
        );
        let counted = analysed.white.stats.counted + analysed.black.stats.counted;
        assert!(counted > 0, "{variant}: some moves counted");
        for side in [&analysed.white, &analysed.black] {
            assert!((0.0..=100.0).contains(&side.stats.score));
        }
    }
}
