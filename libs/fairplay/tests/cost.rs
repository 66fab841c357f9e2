//! The cost of analysing one game per variant at the default settings. Ignored by default
//! (run in release): `cargo test --release -p frontier-fairplay --test cost -- --ignored
//! --nocapture`.

mod common;

use common::{LAYOUT, Player, play};
use frontier_engine::Level;
use frontier_fairplay::{Settings, analyse_game};
use frontier_rules::Variant;

/// This thread's CPU time in seconds (Linux: /proc/thread-self/schedstat), else `None`.
fn thread_cpu_s() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 / 1e9)
}

#[test]
#[ignore = "a measurement: run in release with --nocapture"]
fn cpu_seconds_per_analysed_game_per_variant() {
    const GAMES: u64 = 4;
    const PLIES: u32 = 60;
    let settings = Settings::default();
    println!(
        "settings: {} nodes, first {} plies skipped; games of up to {PLIES} plies, Medium vs Easy at their own budgets",
        settings.nodes, settings.skip_plies
    );
    for variant in Variant::ALL {
        let layout = (variant == Variant::Hidden).then_some(LAYOUT);
        let mut cpu = 0.0;
        let mut wall = 0.0;
        let mut plies = 0;
        let mut analysed = 0;
        for seed in 0..GAMES {
            let (input, _) = play(
                variant,
                layout,
                Player::Honest(Level::Medium, Level::Medium.node_budget(variant)),
                Player::Honest(Level::Easy, Level::Easy.node_budget(variant)),
                1_000 + seed,
                PLIES,
            );
            let cpu0 = thread_cpu_s();
            let t0 = std::time::Instant::now();
            let a = analyse_game(&input, &settings).expect("a good record");
            wall += t0.elapsed().as_secs_f64();
            if let (Some(c0), Some(c1)) = (cpu0, thread_cpu_s()) {
                cpu += c1 - c0;
            }
            plies += input.moves.len();
            analysed += a
                .white
                .moves
                .iter()
                .chain(&a.black.moves)
                .filter(|m| !m.best.is_empty() && m.legal_moves > 1)
                .count();
        }
        let n = GAMES as f64;
        println!(
            "{variant:>8}: {:.3} CPU s per game ({:.3} s wall), {:.1} plies and {:.1} analysed positions per game, {:.1} ms CPU per analysed position",
            cpu / n,
            wall / n,
            plies as f64 / n,
            analysed as f64 / n,
            1000.0 * cpu / analysed.max(1) as f64
        );
    }
}
