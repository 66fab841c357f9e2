//! Properties over random shuffles and random playouts.
//!
//! The central one is non-interference: replaying the same moves with a layout that
//! differs only in identities an audience was never shown must give that audience exactly
//! the same views and events. If anything an audience receives depended on a secret it is
//! not entitled to, some pair of layouts would tell them apart.

use frontier_rules::{
    Audience, Color, Game, HiddenState, Layout, MoveEvent, MoveKind, Position, Role, Shuffle,
    Square, Variant, View, hidden_start_squares, robustness::exercise_parsers,
};
use proptest::prelude::*;

const IDENTITIES: &str = "PPPPPPPPNNBBRRQ";

fn side_layout() -> impl Strategy<Value = Vec<char>> {
    Just(IDENTITIES.chars().collect::<Vec<_>>()).prop_shuffle()
}

fn layout_strategy() -> impl Strategy<Value = String> {
    (side_layout(), side_layout()).prop_map(|(w, b)| {
        let white: String = w.into_iter().collect();
        let black: String = b.into_iter().map(|c| c.to_ascii_lowercase()).collect();
        format!("{white}/{black}")
    })
}

/// One thing a player did: a move, or a promotion choice.
#[derive(Debug, Clone)]
enum Action {
    Move(String),
    Promote(Role),
}

fn apply(game: &mut Game, action: &Action) -> Option<frontier_rules::MoveReport> {
    match action {
        Action::Move(uci) => game.play_uci(uci).ok(),
        Action::Promote(role) => game.choose_promotion(*role).ok(),
    }
}

/// Plays a random game of at most `choices.len()` actions, picking by the given numbers.
fn playout(game: &mut Game, choices: &[u16]) -> Vec<Action> {
    let mut actions = Vec::new();
    for &c in choices {
        if game.outcome().is_some() {
            break;
        }
        let action = if game.pending_promotion().is_some() {
            Action::Promote(Role::PROMOTIONS[c as usize % 4])
        } else {
            let moves = game.legal_moves();
            let m = moves[c as usize % moves.len()];
            Action::Move(m.to_string())
        };
        assert!(apply(game, &action).is_some(), "a legal action is accepted");
        actions.push(action);
    }
    actions
}

/// The squares whose hidden piece left by moving (publicly revealed), and the squares of
/// hidden pieces captured while hidden, by capturer.
fn reveals_and_captures(layout: &str, actions: &[Action]) -> (Vec<Square>, Vec<(Color, Square)>) {
    let mut game = hidden_game(layout);
    let mut revealed = Vec::new();
    let mut captured = Vec::new();
    for action in actions {
        let before = game.position().hidden();
        let report = apply(&mut game, action).expect("replays");
        let event = report.for_audience(Audience::Spectator);
        if let Some(c) = event.captured.filter(|c| c.was_hidden) {
            captured.push((event.mover, c.square));
        }
        let after = if game.pending_promotion().is_some() {
            // The pending pawn's origin is no longer hidden in the view.
            game.view(Audience::Spectator).position.hidden()
        } else {
            game.position().hidden()
        };
        for sq in before & !after {
            if !captured.iter().any(|&(_, s)| s == sq) {
                revealed.push(sq);
            }
        }
    }
    (revealed, captured)
}

fn hidden_game(layout: &str) -> Game {
    let layout = Layout::from_canonical(layout).expect("generated layouts are valid");
    Game::new_hidden(Shuffle::new(layout, [7; 32]))
}

/// `layout` with the identities on the squares NOT in `fixed` permuted (per side) by `seed`.
fn permute_unfixed(layout: &str, fixed: &[Square], seed: u64) -> String {
    let (white, black) = layout.split_once('/').expect("layout shape");
    let mut out = Vec::new();
    let mut state = seed | 1;
    for (color, part) in [(Color::White, white), (Color::Black, black)] {
        let mut chars: Vec<char> = part.chars().collect();
        let squares = hidden_start_squares(color);
        let free: Vec<usize> = (0..15).filter(|&i| !fixed.contains(&squares[i])).collect();
        for k in (1..free.len()).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let j = (state % (k as u64 + 1)) as usize;
            chars.swap(free[k], free[j]);
        }
        out.push(chars.into_iter().collect::<String>());
    }
    out.join("/")
}

/// A view without the two fields that legitimately depend on the whole layout: the
/// commitment (a salted hash) and, after the end, the published shuffle.
fn comparable(mut view: View) -> View {
    view.commitment = None;
    view.shuffle = None;
    view
}

fn events_and_views(
    layout: &str,
    actions: &[Action],
    audience: Audience,
) -> Vec<(Option<MoveEvent>, View, Vec<String>)> {
    let mut game = hidden_game(layout);
    let mut out = Vec::new();
    for action in actions {
        let event = apply(&mut game, action).map(|r| r.for_audience(audience));
        let legal = game.legal_moves().iter().map(|m| m.to_string()).collect();
        out.push((event, comparable(game.view(audience)), legal));
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    /// Legal moves, spectator views and spectator events are the same for every shuffle
    /// that agrees with what was publicly revealed.
    #[test]
    fn spectators_learn_nothing_hidden(
        layout in layout_strategy(),
        choices in proptest::collection::vec(any::<u16>(), 1..160),
        seed in any::<u64>(),
    ) {
        let mut game = hidden_game(&layout);
        let actions = playout(&mut game, &choices);
        let (revealed, _) = reveals_and_captures(&layout, &actions);
        let other = permute_unfixed(&layout, &revealed, seed);
        let a = events_and_views(&layout, &actions, Audience::Spectator);
        let b = events_and_views(&other, &actions, Audience::Spectator);
        prop_assert_eq!(a.len(), b.len());
        for (step, (x, y)) in a.iter().zip(&b).enumerate() {
            prop_assert!(y.0.is_some(), "step {} replays under the other layout", step);
            prop_assert_eq!(x, y, "step {}", step);
        }
    }

    /// Each player's views and events are the same for every shuffle that agrees with
    /// what was revealed and with the identities that player captured; and the identities
    /// in a player's view are exactly the true ones of the pieces it captured.
    #[test]
    fn players_learn_only_reveals_and_their_captures(
        layout in layout_strategy(),
        choices in proptest::collection::vec(any::<u16>(), 1..160),
        seed in any::<u64>(),
    ) {
        let mut game = hidden_game(&layout);
        let actions = playout(&mut game, &choices);
        let (revealed, captured) = reveals_and_captures(&layout, &actions);
        for player in Color::ALL {
            let mut fixed = revealed.clone();
            fixed.extend(captured.iter().filter(|(c, _)| *c == player).map(|&(_, s)| s));
            let other = permute_unfixed(&layout, &fixed, seed);
            let a = events_and_views(&layout, &actions, Audience::Player(player));
            let b = events_and_views(&other, &actions, Audience::Player(player));
            for (step, (x, y)) in a.iter().zip(&b).enumerate() {
                prop_assert_eq!(x, y, "{:?} step {}", player, step);
            }
            // What the player was told about its captures is the truth.
            let view = game.view(Audience::Player(player));
            let mine: Vec<Square> = captured.iter().filter(|(c, _)| *c == player).map(|&(_, s)| s).collect();
            prop_assert_eq!(view.captured_identities.len(), mine.len());
            for id in &view.captured_identities {
                prop_assert!(mine.contains(&id.square));
                prop_assert_eq!(Some(id.role), true_role(&layout, id.square));
            }
        }
    }

    /// Views print and parse back; the incremental Zobrist key equals the one computed
    /// from scratch after every move, in every variant; snapshots restore the same game.
    #[test]
    fn fen_round_trips_and_zobrist_keys(
        layout in layout_strategy(),
        choices in proptest::collection::vec(any::<u16>(), 1..200),
    ) {
        for variant in Variant::ALL {
            let mut game = match variant {
                Variant::Hidden => hidden_game(&layout),
                v => Game::new(v).expect("no randomness needed"),
            };
            for &c in &choices {
                if game.outcome().is_some() {
                    break;
                }
                if game.pending_promotion().is_some() {
                    prop_assert!(game.choose_promotion(Role::PROMOTIONS[c as usize % 4]).is_ok());
                    continue;
                }
                let moves = game.legal_moves();
                let m = moves[c as usize % moves.len()];
                prop_assert!(game.play(&m).is_ok());
                let pos = game.position();
                prop_assert_eq!(pos.key(), pos.compute_key());
                // The storage form restores the same game for every audience.
                let restored = Game::restore(game.snapshot());
                prop_assert!(restored.is_ok(), "{:?}", restored.err());
                let restored = restored.expect("checked");
                for audience in [Audience::Spectator, Audience::Player(Color::White), Audience::Player(Color::Black)] {
                    // Equal as positions (FEN and repetition key: the stored form keeps an
                    // en-passant square only when a capture there is legal).
                    let (a, b) = (restored.view(audience), game.view(audience));
                    prop_assert_eq!(a.fen(), b.fen());
                    prop_assert_eq!(a.position.repetition_key(), b.position.repetition_key());
                    prop_assert_eq!(
                        (a.pending_promotion, a.captured_identities, a.commitment, a.outcome, a.shuffle),
                        (b.pending_promotion, b.captured_identities, b.commitment, b.outcome, b.shuffle)
                    );
                }
                let sorted = |g: &Game| {
                    let mut v: Vec<String> = g.legal_moves().iter().map(|m| m.to_string()).collect();
                    v.sort();
                    v
                };
                prop_assert_eq!(sorted(&restored), sorted(&game));
                prop_assert_eq!(restored.repetitions(), game.repetitions());
                if game.pending_promotion().is_none() {
                    let fen = pos.fen();
                    let parsed = Position::from_fen(variant, &fen);
                    prop_assert!(parsed.is_ok(), "{} does not parse: {:?}", fen, parsed);
                    let parsed = parsed.expect("checked");
                    prop_assert_eq!(parsed.fen(), fen.clone());
                    prop_assert_eq!(parsed.repetition_key(), pos.repetition_key());
                    if let Some(server) = game.server_fen() {
                        let state = HiddenState::from_server_fen(&server);
                        prop_assert!(state.is_ok(), "{} does not parse", server);
                        let state = state.expect("checked");
                        prop_assert_eq!(state.server_fen(), server);
                        prop_assert_eq!(state.position().fen(), fen);
                    }
                }
            }
        }
    }

    /// Arbitrary text never panics a parser.
    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,120}") {
        exercise_parsers(&text);
    }

    /// Nor does a valid FEN with a few characters changed, which reaches deeper.
    #[test]
    fn mutated_fens_never_panic(
        base in prop::sample::select(vec![
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1|e2e4",
            "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1|e1g1",
            "4k3/8/8/8/8/8/8/P3K3 w - - 0 1 a1|a1a8q",
            "4k3/3p4/8/4P3/8/8/8/4K3 b - - 0 1 d7|d7d5",
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 a1b1c1d1f1g1h1a2b2c2d2e2f2g2h2a7b7c7d7e7f7g7h7a8b8c8d8f8g8h8|b1c3",
        ]),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<char>()), 1..6),
    ) {
        let mut chars: Vec<char> = base.chars().collect();
        for (at, c) in edits {
            let i = at.index(chars.len());
            chars[i] = c;
        }
        exercise_parsers(&chars.into_iter().collect::<String>());
    }
}

fn true_role(layout: &str, sq: Square) -> Option<Role> {
    let (white, black) = layout.split_once('/')?;
    for (color, part) in [(Color::White, white), (Color::Black, black)] {
        if let Some(i) = hidden_start_squares(color).iter().position(|&s| s == sq) {
            return part.chars().nth(i).and_then(Role::from_char);
        }
    }
    None
}

/// Plays `rounds` random games (standard, hidden and atomic chess in turn, at most 400
/// plies each, promotions chosen at random) and shows `check` every position reached, with
/// a fresh random number. The xorshift is seeded, so a failure repeats.
fn each_random_position(seed: u64, rounds: usize, mut check: impl FnMut(&Position, u64)) {
    let mut x = seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for round in 0..rounds {
        let variant = [Variant::Standard, Variant::Hidden, Variant::Atomic][round % 3];
        let mut game = Game::new(variant).expect("game");
        for _ in 0..400 {
            check(game.position(), next());
            if game.outcome().is_some() {
                break;
            }
            if game.pending_promotion().is_some() {
                let role = Role::PROMOTIONS[(next() % 4) as usize];
                game.choose_promotion(role).expect("choice");
                continue;
            }
            let moves = game.legal_moves();
            let m = moves[(next() % moves.len() as u64) as usize];
            game.play(&m).expect("legal");
        }
    }
}

/// `has_legal_move` (which answers from the king's safe squares first in standard and
/// hidden chess) says what the full legal list says, in every position of random games of
/// every variant: with a king move, without one but with others, and with none (mate,
/// stalemate); and in the hand-picked ends below.
#[test]
fn has_legal_move_says_what_the_legal_list_says() {
    // Positions with a legal king move, without one but with other moves, with none.
    let mut seen = [0usize; 3];
    let mut check = |position: &Position| {
        let list = position.legal_move_list();
        assert_eq!(
            position.has_legal_move(),
            !list.is_empty(),
            "{}",
            position.fen()
        );
        let king_moves = list
            .iter()
            .any(|m| m.role() == Role::King && !matches!(m.kind(), MoveKind::Castle { .. }));
        seen[if list.is_empty() {
            2
        } else if king_moves {
            0
        } else {
            1
        }] += 1;
    };
    each_random_position(0x2545_f491_4f6c_dd1d, 240, |position, _| check(position));
    for (variant, fen) in [
        // Stalemate, mate, a double check with no king move, a smothered mate.
        (Variant::Standard, "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1"),
        (Variant::Standard, "6k1/5ppp/8/8/8/8/8/R5K1 b - - 0 1"),
        (Variant::Standard, "R5k1/5ppp/8/8/8/8/8/6K1 b - - 0 1"),
        (Variant::Standard, "6rk/5Npp/8/8/8/8/8/6K1 b - - 0 1"),
        (Variant::Standard, "4k3/8/8/8/8/8/3PPP2/3QKB2 w - - 0 1"),
    ] {
        check(&Position::from_fen(variant, fen).expect("fen"));
    }
    assert!(
        seen.iter().all(|&n| n > 0),
        "king move, other moves only, none: {seen:?}"
    );
}

/// A set-up (Chess960-like) position where the king's step f1-g1 and its castling share
/// both squares, with a pinned knight the full list's pin filter swaps about.
const KING_BESIDE_ITS_CASTLING_SQUARE: &str = "k4r2/8/8/8/8/8/5N2/5K1R w K - 0 1";

/// `to_move` names the king's step, not the castling, when both go between the same
/// squares (only a set-up position can have it); the castling is still in the list.
#[test]
fn a_kings_step_and_its_castling_on_the_same_squares_name_the_step() {
    for variant in [Variant::Standard, Variant::Atomic] {
        let position = Position::from_fen(variant, KING_BESIDE_ITS_CASTLING_SQUARE).expect("fen");
        let named = position.parse_uci("f1g1").expect("legal");
        assert_eq!(named.kind(), MoveKind::Normal, "{variant:?}: the step");
        assert!(
            position
                .legal_move_list()
                .iter()
                .any(|m| matches!(m.kind(), MoveKind::Castle { .. }) && m.to().to_string() == "g1"),
            "{variant:?}: castling is legal too"
        );
    }
}

/// `legal_moves_between` (which `to_move` asks, generating only the moves between two
/// squares) lists exactly the full list's moves between those squares, in every position
/// of random games of every variant: for every legal move's squares, for one random piece
/// of the side to move against all 64 squares (a pinned piece's illegal moves must stay
/// out), and for random pairs; then in hand-picked set-ups (double check, an en passant
/// that would bare the king along its rank, a king beside its castling square). Castling,
/// en passant, a promotion and a king's move in check must all turn up among the moves
/// compared.
#[test]
fn moves_between_two_squares_are_the_full_lists_moves_between_them() {
    use frontier_rules::MoveList;
    // Castling, en passant, promotion, a king's move out of check.
    let mut seen = [0usize; 4];
    let mut check = |position: &Position, random: u64| {
        let list = position.legal_move_list();
        let mut pairs: Vec<(Square, Square)> = list.iter().map(|m| (m.from(), m.to())).collect();
        for i in 0..4u64 {
            let from = Square::from_index(((random >> (i * 12)) % 64) as u8).expect("square");
            let to = Square::from_index(((random >> (i * 12 + 6)) % 64) as u8).expect("square");
            pairs.push((from, to));
        }
        let ours: Vec<Square> = position.board().by_color(position.turn()).collect();
        if !ours.is_empty() {
            let from = ours[((random >> 48) % ours.len() as u64) as usize];
            for to in 0..64 {
                pairs.push((from, Square::from_index(to).expect("square")));
            }
        }
        for (from, to) in pairs {
            let mut between = MoveList::new();
            position.legal_moves_between(from, to, &mut between);
            let mut expected: Vec<_> = list
                .iter()
                .filter(|m| m.from() == from && m.to() == to)
                .copied()
                .collect();
            let mut got: Vec<_> = between.to_vec();
            let key = |m: &frontier_rules::Move| format!("{m:?}");
            expected.sort_by_key(key);
            got.sort_by_key(key);
            assert_eq!(got, expected, "{} {from}{to}", position.fen());
        }
        let in_check = position.is_check();
        for m in &list {
            match m.kind() {
                MoveKind::Castle { .. } => seen[0] += 1,
                MoveKind::EnPassant => seen[1] += 1,
                _ => {}
            }
            if m.promotion().is_some() {
                seen[2] += 1;
            }
            if in_check && m.role() == Role::King {
                seen[3] += 1;
            }
        }
    };
    each_random_position(0x9e37_79b9_7f4a_7c15, 240, &mut check);
    for (variant, fen) in [
        // Double check; en passant that would bare the king along the fifth rank.
        (Variant::Standard, "4r1k1/8/8/8/1b6/8/8/4K3 w - - 0 1"),
        (Variant::Standard, "8/8/8/K2pP2r/8/8/8/7k w - d6 0 1"),
        (Variant::Atomic, "8/8/8/K2pP2r/8/8/8/7k w - d6 0 1"),
        // The king beside its castling square, a pinned knight ahead of it in the list.
        (Variant::Standard, KING_BESIDE_ITS_CASTLING_SQUARE),
        (Variant::Atomic, KING_BESIDE_ITS_CASTLING_SQUARE),
    ] {
        check(&Position::from_fen(variant, fen).expect("fen"), 0);
    }
    assert!(
        seen.iter().all(|&n| n > 0),
        "castling, en passant, promotion, king out of check: {seen:?}"
    );
}
