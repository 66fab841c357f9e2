//! The move-time signals of one game, from the record's `at_ms`.

mod common;

use common::{Player, play};
use frontier_engine::Level;
use frontier_fairplay::{GameInput, Settings, Skip, analyse_game};
use frontier_rules::Variant;

fn settings() -> Settings {
    Settings {
        nodes: 1_500,
        skip_plies: 8,
        ..Settings::default()
    }
}

/// The record with new think times: `think(ply)` for each ply (1-based).
fn retimed(input: &GameInput, think: impl Fn(u32) -> u64) -> GameInput {
    let mut at = 0;
    let mut out = input.clone();
    for (i, m) in out.moves.iter_mut().enumerate() {
        at += think(i as u32 + 1);
        m.at_ms = at;
    }
    out
}

#[test]
fn steady_think_time_and_fast_best_moves_in_complex_positions_are_measured() {
    let (input, _) = play(
        Variant::Standard,
        None,
        Player::Engine(1_500),
        Player::Engine(1_500),
        11,
        40,
    );
    let first = analyse_game(&input, &settings()).expect("a good record");
    // White: a machine-steady 3 s per move. Black: alternating 1 s and 9 s.
    let steady = retimed(&input, |ply| {
        if ply % 2 == 1 {
            3_000
        } else {
            1_000 + 8_000 * u64::from(ply % 4 == 0)
        }
    });
    let a = analyse_game(&steady, &settings()).expect("a good record");
    assert!(a.white.stats.timed >= 6);
    assert!(a.white.stats.think_cv < 0.01, "{}", a.white.stats.think_cv);
    assert!(a.black.stats.think_cv > 0.5, "{}", a.black.stats.think_cv);
    // The moves' analysis does not depend on the clock.
    for (x, y) in first.white.moves.iter().zip(&a.white.moves) {
        assert_eq!(
            (&x.best, x.loss_cp, x.skipped),
            (&y.best, y.loss_cp, y.skipped)
        );
    }

    // White answers three complex positions where it found the best move in 0.4 s, and
    // everything else in 5 s ("fast" is relative to the side's median think time).
    let fast_plies: Vec<u32> = first
        .white
        .moves
        .iter()
        .filter(|m| m.complex && m.skipped.is_none() && m.top1 && m.timed)
        .map(|m| m.ply)
        .take(3)
        .collect();
    assert!(
        fast_plies.len() >= 2,
        "complex positions in the game: {:?}",
        first.white.moves
    );
    let fast = retimed(&input, |ply| {
        if fast_plies.contains(&ply) {
            400
        } else {
            5_000
        }
    });
    let b = analyse_game(&fast, &settings()).expect("a good record");
    let expected = fast_plies.len() as f64 / f64::from(b.white.stats.complex);
    assert!((b.white.stats.fast_best_complex - expected).abs() < 1e-9);
    for m in b.white.moves.iter().filter(|m| fast_plies.contains(&m.ply)) {
        assert!(
            m.flagged,
            "ply {}: a fast best move in a complex position is flagged",
            m.ply
        );
    }
    let complex: Vec<u32> = first
        .white
        .moves
        .iter()
        .filter(|m| m.complex && m.skipped.is_none())
        .map(|m| m.ply)
        .collect();
    // Played slowly, the same moves are not fast.
    let slow = retimed(
        &input,
        |ply| if complex.contains(&ply) { 9_000 } else { 3_000 },
    );
    let c = analyse_game(&slow, &settings()).expect("a good record");
    assert_eq!(c.white.stats.fast_best_complex, 0.0);
}

#[test]
fn the_first_move_of_each_side_and_the_opening_have_no_think_time() {
    let (input, _) = play(
        Variant::Standard,
        None,
        Player::Honest(Level::Easy, 800),
        Player::Honest(Level::Easy, 800),
        5,
        24,
    );
    let a = analyse_game(&input, &settings()).expect("a good record");
    for side in [&a.white, &a.black] {
        for m in &side.moves {
            if m.ply <= 2 || m.skipped == Some(Skip::Opening) {
                assert!(!m.timed, "ply {}", m.ply);
            }
        }
    }
}
