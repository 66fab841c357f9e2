//! An engine used on only some moves raises the score in proportion: one side uses the
//! engine (Hard) on 0 %, 50 % and 100 % of its moves (a seeded draw per move) and the
//! Easy level on the others, against an Easy opponent.

mod common;

use common::{Player, in_parallel, play};
use frontier_engine::Level;
use frontier_fairplay::{GameSummary, Settings, Thresholds, aggregate, analyse_game};
use frontier_rules::{Color, Variant};

const NODES: u64 = 3_000;
const PLIES: u32 = 40;
/// Games per share (half with White, half with Black).
const GAMES: usize = 2;
const SHARES: [f64; 3] = [0.0, 0.5, 1.0];

#[test]
fn the_score_rises_with_the_share_of_engine_moves() {
    let settings = Settings {
        nodes: NODES,
        skip_plies: 8,
        ..Settings::default()
    };
    let runs = in_parallel(SHARES.len() * GAMES, |k| {
        let share = SHARES[k / GAMES];
        let i = k % GAMES;
        let mixed = Player::Mixed {
            nodes: NODES,
            easy_nodes: NODES,
            share,
        };
        let easy = Player::Honest(Level::Easy, NODES);
        let color = if i.is_multiple_of(2) {
            Color::White
        } else {
            Color::Black
        };
        let (white, black) = match color {
            Color::White => (mixed, easy),
            Color::Black => (easy, mixed),
        };
        let (input, used) = play(Variant::Standard, None, white, black, 300 + i as u64, PLIES);
        let side_used: Vec<bool> = used
            .iter()
            .enumerate()
            .filter(|(ply, _)| ply.is_multiple_of(2) == (color == Color::White))
            .map(|(_, u)| *u)
            .collect();
        let used_share =
            side_used.iter().filter(|u| **u).count() as f64 / side_used.len().max(1) as f64;
        let analysed = analyse_game(&input, &settings).expect("a good record");
        (analysed[color].stats, used_share)
    });
    let mut previous: Option<(f64, f64, f64)> = None;
    for (s, share) in SHARES.iter().enumerate() {
        let games = &runs[s * GAMES..(s + 1) * GAMES];
        let counted: u32 = games.iter().map(|g| g.0.counted).sum();
        let top1 = games
            .iter()
            .map(|g| g.0.top1 * f64::from(g.0.counted))
            .sum::<f64>()
            / f64::from(counted);
        let game_score = games.iter().map(|g| g.0.score).sum::<f64>() / GAMES as f64;
        let summaries: Vec<GameSummary> = games
            .iter()
            .map(|g| GameSummary {
                stats: g.0,
                rating: 1500.0,
            })
            .collect();
        let verdict = aggregate(&summaries, &Thresholds::default());
        let used = games.iter().map(|g| g.1).sum::<f64>() / GAMES as f64;
        println!(
            "engine on {:.0}% (drawn: {:.0}%): top1 {top1:.2}, mean game score {game_score:.1}, verdict score {:.1}",
            100.0 * share,
            100.0 * used,
            verdict.score
        );
        if let Some((top1_before, game_before, verdict_before)) = previous {
            assert!(
                top1 > top1_before,
                "top-1 rises: {top1_before:.2} → {top1:.2}"
            );
            assert!(
                game_score > game_before,
                "game score rises: {game_before:.1} → {game_score:.1}"
            );
            assert!(
                verdict.score > verdict_before,
                "verdict score rises: {verdict_before:.1} → {:.1}",
                verdict.score
            );
        }
        previous = Some((top1, game_score, verdict.score));
    }
}
