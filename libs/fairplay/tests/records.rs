//! Records that cannot be analysed are refused with a typed error (the service terminates
//! such a message, never retries it).

use frontier_fairplay::{AnalysisError, GameInput, PlyInput, Settings, analyse_game};
use frontier_rules::Variant;

fn record(variant: Variant, layout: Option<&str>, moves: &[&str]) -> GameInput {
    GameInput {
        variant,
        start_fen: String::new(),
        initial_layout: layout.map(str::to_owned),
        moves: moves
            .iter()
            .enumerate()
            .map(|(i, m)| PlyInput {
                uci: (*m).to_owned(),
                at_ms: 1_000 * (i as u64 + 1),
                clock_ms: None,
            })
            .collect(),
        increment_ms: 0,
    }
}

fn settings() -> Settings {
    Settings {
        nodes: 300,
        skip_plies: 0,
        ..Settings::default()
    }
}

#[test]
fn bad_records_are_refused_with_a_typed_error() {
    let illegal = analyse_game(
        &record(Variant::Standard, None, &["e2e4", "e7e5", "e4e5"]),
        &settings(),
    );
    assert!(
        matches!(illegal, Err(AnalysisError::IllegalMove { ply: 3, .. })),
        "{illegal:?}"
    );
    let garbage = analyse_game(&record(Variant::Standard, None, &["zz"]), &settings());
    assert!(matches!(
        garbage,
        Err(AnalysisError::IllegalMove { ply: 1, .. })
    ));
    let bad_fen = analyse_game(
        &GameInput {
            start_fen: "not a fen".into(),
            ..record(Variant::Standard, None, &[])
        },
        &settings(),
    );
    assert!(matches!(bad_fen, Err(AnalysisError::BadFen(_))));
    let no_layout = analyse_game(&record(Variant::Hidden, None, &["e2e4"]), &settings());
    assert_eq!(no_layout, Err(AnalysisError::MissingLayout));
    let bad_layout = analyse_game(
        &record(Variant::Hidden, Some("QQQ/qqq"), &["e2e4"]),
        &settings(),
    );
    assert!(matches!(bad_layout, Err(AnalysisError::BadLayout(_))));
}

#[test]
fn every_ply_is_analysed_once_for_its_mover() {
    let moves = [
        "e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6", "b5a4", "g8f6",
    ];
    let a = analyse_game(&record(Variant::Standard, None, &moves), &settings()).expect("legal");
    let white: Vec<u32> = a.white.moves.iter().map(|m| m.ply).collect();
    let black: Vec<u32> = a.black.moves.iter().map(|m| m.ply).collect();
    assert_eq!(white, [1, 3, 5, 7]);
    assert_eq!(black, [2, 4, 6, 8]);
    for m in a.white.moves.iter().chain(&a.black.moves) {
        assert_eq!(m.played, moves[m.ply as usize - 1]);
        assert!(m.legal_moves > 1 && !m.best.is_empty());
        assert!(m.near_best >= 1 && m.loss_cp <= 1_000);
    }
    // Unshuffled hidden chess replays the same moves.
    let hidden = record(
        Variant::Hidden,
        Some("RNBQBNRPPPPPPPP/rnbqbnrpppppppp"),
        &moves,
    );
    assert!(analyse_game(&hidden, &settings()).is_ok());
    // The record's start FEN (the public view, hidden squares listed) replays as the start.
    let shuffled = record(
        Variant::Hidden,
        Some("NPBRPQPPNRPBPPP/pprnbpqpbnpprpp"),
        &moves[..2],
    );
    let with_fen = GameInput {
        start_fen: frontier_rules::Position::new(Variant::Hidden).fen(),
        ..shuffled.clone()
    };
    assert_eq!(
        analyse_game(&shuffled, &settings()),
        analyse_game(&with_fen, &settings())
    );
    // And the analysis is reproducible.
    let again = analyse_game(&record(Variant::Standard, None, &moves), &settings()).expect("legal");
    assert_eq!(a, again);
}

#[test]
fn an_only_move_is_skipped_but_kept() {
    // 1. e4 f5 2. Qh5+: Black's only legal move is g6.
    let a = analyse_game(
        &record(Variant::Standard, None, &["e2e4", "f7f5", "d1h5", "g7g6"]),
        &settings(),
    )
    .expect("legal");
    let reply = &a.black.moves[1];
    assert_eq!((reply.ply, reply.legal_moves), (4, 1));
    assert_eq!(reply.skipped.map(|s| s.as_str()), Some("only_move"));
}
