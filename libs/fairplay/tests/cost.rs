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

/// The separation at the default settings (release): the engine at Hard's own budget
/// against Easy, and Easy against Easy, games of up to 80 plies.
#[test]
#[ignore = "a measurement: run in release with --nocapture"]
fn separation_at_the_default_settings() {
    use frontier_fairplay::{GameSummary, Thresholds, aggregate};
    use frontier_rules::Color;
    const GAMES: u64 = 10;
    // FAIRPLAY_NODES / FAIRPLAY_DECIDED override the defaults (to compare settings).
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse().ok());
    let defaults = Settings::default();
    let settings = Settings {
        nodes: env("FAIRPLAY_NODES").unwrap_or(defaults.nodes),
        decided_cp: env("FAIRPLAY_DECIDED").map_or(defaults.decided_cp, |d: u64| d as i32),
        ..defaults
    };
    println!("{settings:?}");
    let hard = Level::Hard.node_budget(Variant::Standard);
    let easy = Level::Easy.node_budget(Variant::Standard);
    let mut engine = Vec::new();
    let mut honest = Vec::new();
    for seed in 0..GAMES {
        let engine_color = if seed.is_multiple_of(2) {
            Color::White
        } else {
            Color::Black
        };
        let (w, b) = match engine_color {
            Color::White => (Player::Engine(hard), Player::Honest(Level::Easy, easy)),
            Color::Black => (Player::Honest(Level::Easy, easy), Player::Engine(hard)),
        };
        let (input, _) = play(Variant::Standard, None, w, b, 2_000 + seed, 80);
        let a = analyse_game(&input, &settings).expect("a good record");
        engine.push(a[engine_color].stats);
        honest.push(a[!engine_color].stats);
        // Easy against Easy: both honest.
        let (input, _) = play(
            Variant::Standard,
            None,
            Player::Honest(Level::Easy, easy),
            Player::Honest(Level::Easy, easy),
            3_000 + seed,
            80,
        );
        let a = analyse_game(&input, &settings).expect("a good record");
        honest.push(a.white.stats);
        honest.push(a.black.stats);
    }
    let t = Thresholds::default();
    let summaries = |s: &[frontier_fairplay::GameStats]| -> Vec<GameSummary> {
        s.iter()
            .map(|&stats| GameSummary {
                stats,
                rating: 1500.0,
            })
            .collect()
    };
    for (name, stats) in [("engine", &engine), ("honest", &honest)] {
        let counted: u32 = stats.iter().map(|s| s.counted).sum();
        let top1 = stats
            .iter()
            .map(|s| s.top1 * f64::from(s.counted))
            .sum::<f64>()
            / f64::from(counted.max(1));
        let acpl = stats
            .iter()
            .map(|s| s.acpl * f64::from(s.counted))
            .sum::<f64>()
            / f64::from(counted.max(1));
        let high = stats.iter().filter(|s| s.score >= t.report_score).count();
        // Verdicts over windows of 10 consecutive games.
        let windows: Vec<bool> = stats
            .chunks(10)
            .filter(|c| c.len() == 10)
            .map(|c| aggregate(&summaries(c), &t).report)
            .collect();
        let v = aggregate(&summaries(stats), &t);
        println!(
            "{name}: {} player-games, {counted} counted moves, top1 {top1:.2}, acpl {acpl:.1}; games scoring ≥ {}: {high}; verdict score {:.1} report {}; 10-game windows reported: {}/{}",
            stats.len(),
            t.report_score,
            v.score,
            v.report,
            windows.iter().filter(|r| **r).count(),
            windows.len()
        );
    }
}
