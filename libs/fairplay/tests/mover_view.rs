//! Hidden chess is analysed from the mover's own view: two records with the same moves
//! whose layouts differ only in identities a side could not know give that side identical
//! analyses; an identity the side did learn (by capturing the piece) is allowed to change
//! them — and here does.

mod common;

use common::{LAYOUT, Player, play};
use frontier_engine::Level;
use frontier_fairplay::{GameInput, Settings, SideAnalysis, analyse_game};
use frontier_rules::{
    Audience, Color, Game, Layout, Shuffle, Square, Variant, hidden_start_squares,
};

fn settings() -> Settings {
    Settings {
        nodes: 1_500,
        skip_plies: 8,
        ..Settings::default()
    }
}

/// The canonical layout's letter index for `sq` (a start square of `color`).
fn index_of(color: Color, sq: Square) -> usize {
    let offset = if color == Color::White { 0 } else { 16 };
    offset
        + hidden_start_squares(color)
            .into_iter()
            .position(|s| s == sq)
            .expect("a hidden start square")
}

fn role_at(layout: &str, color: Color, sq: Square) -> char {
    layout.as_bytes()[index_of(color, sq)] as char
}

fn swapped(layout: &str, color: Color, a: Square, b: Square) -> String {
    let mut bytes = layout.as_bytes().to_vec();
    bytes.swap(index_of(color, a), index_of(color, b));
    String::from_utf8(bytes).expect("ASCII")
}

fn with_layout(input: &GameInput, layout: &str) -> GameInput {
    GameInput {
        initial_layout: Some(layout.to_owned()),
        ..input.clone()
    }
}

fn white_side(input: &GameInput) -> SideAnalysis {
    analyse_game(input, &settings())
        .expect("the record replays under this layout")
        .white
}

/// The record's game replayed by the rules under its own layout (the test's referee).
fn replayed(input: &GameInput) -> Game {
    let layout =
        Layout::from_canonical(input.initial_layout.as_deref().expect("hidden")).expect("a layout");
    let mut game = Game::new_hidden(Shuffle::new(layout, [0; 32]));
    for m in &input.moves {
        game.play_uci(&m.uci).expect("legal");
    }
    game
}

#[test]
fn identities_the_mover_could_not_know_leave_its_analysis_unchanged() {
    let mut checked_visible = false;
    let mut checked_lost = false;
    for seed in 0..6 {
        let (input, _) = play(
            Variant::Hidden,
            Some(LAYOUT),
            Player::Honest(Level::Easy, 1_000),
            Player::Honest(Level::Easy, 1_000),
            seed,
            36,
        );
        let game = replayed(&input);
        let end = *game.position();
        // Black's pieces hidden to the end never moved and were never captured: White never
        // learnt what they are. Swap two of different identities.
        let still_hidden: Vec<Square> = (end.hidden() & end.board().by_color(Color::Black))
            .into_iter()
            .collect();
        let Some((a, b)) = still_hidden.iter().enumerate().find_map(|(i, &a)| {
            still_hidden[i + 1..]
                .iter()
                .find(|&&b| role_at(LAYOUT, Color::Black, a) != role_at(LAYOUT, Color::Black, b))
                .map(|&b| (a, b))
        }) else {
            continue;
        };
        let unseen = swapped(LAYOUT, Color::Black, a, b);
        assert_ne!(unseen, LAYOUT, "the layouts differ");
        let original = white_side(&input);
        let changed = white_side(&with_layout(&input, &unseen));
        assert!(original.stats.counted > 0, "White's moves were analysed");
        assert_eq!(
            original.moves, changed.moves,
            "seed {seed}: swapping Black's unseen {a} and {b} changed White's analysis"
        );
        assert_eq!(original.stats, changed.stats);

        // White's pieces Black captured while still hidden: Black learnt what they were,
        // White never did (the record's captures by the other side do not count). Swapping
        // one with an unseen White piece of another identity leaves White's analysis alone.
        let lost = game
            .view(Audience::Player(Color::Black))
            .captured_identities;
        let white_hidden: Vec<Square> = (end.hidden() & end.board().by_color(Color::White))
            .into_iter()
            .collect();
        let lost_swap = lost.iter().find_map(|c| {
            white_hidden
                .iter()
                .find(|&&h| {
                    role_at(LAYOUT, Color::White, h) != role_at(LAYOUT, Color::White, c.square)
                })
                .map(|&h| (c.square, h))
        });
        if let Some((lost_sq, kept_sq)) = lost_swap {
            let unseen_own = swapped(LAYOUT, Color::White, lost_sq, kept_sq);
            assert_ne!(unseen_own, LAYOUT, "the layouts differ");
            let changed = white_side(&with_layout(&input, &unseen_own));
            assert_eq!(
                original.moves, changed.moves,
                "seed {seed}: the identity of White's {lost_sq}, captured by Black, changed White's analysis"
            );
            checked_lost = true;
        }

        // Black's pieces White captured while still hidden: White learnt their identities.
        // Swapping one with an unseen piece of another identity changes what White knew.
        let captured = game
            .view(Audience::Player(Color::White))
            .captured_identities;
        let visible = captured.iter().find_map(|c| {
            still_hidden
                .iter()
                .find(|&&h| {
                    role_at(LAYOUT, Color::Black, h) != role_at(LAYOUT, Color::Black, c.square)
                })
                .map(|&h| (c.square, h, c.ply))
        });
        if let Some((taken, unseen_sq, ply)) = visible {
            let learnt = swapped(LAYOUT, Color::Black, taken, unseen_sq);
            assert_ne!(learnt, LAYOUT, "the layouts differ");
            let after = white_side(&with_layout(&input, &learnt));
            // Up to the capture White's view was the same …
            let before_capture = |side: &SideAnalysis| -> Vec<_> {
                side.moves
                    .iter()
                    .filter(|m| m.ply <= ply)
                    .cloned()
                    .collect()
            };
            assert_eq!(before_capture(&original), before_capture(&after));
            // … after it, White knew another identity: the analysis is allowed to differ,
            // and with a different pool of unaccounted identities it does.
            assert_ne!(
                original.moves, after.moves,
                "seed {seed}: a learnt identity changed nothing"
            );
            checked_visible = true;
        }
        if checked_visible && checked_lost {
            return;
        }
    }
    panic!("no game had an unseen swap, a lost piece and a captured identity to change");
}
