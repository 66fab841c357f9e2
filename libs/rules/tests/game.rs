//! Games through the server-facing API: what each audience is told, pending promotions,
//! the fair-shuffle commitment, game endings and typed errors.

use frontier_rules::{
    Audience, Color, DrawReason, FenError, FenField, Game, HiddenState, Layout, MoveError, Outcome,
    PlayError, Position, PositionError, Role, Shuffle, Square, Variant, VerifyError, WinReason,
    verify_shuffle,
};

fn hidden(fen: &str) -> Game {
    Game::from_hidden_state(HiddenState::from_server_fen(fen).expect("valid server FEN"))
}

#[test]
fn only_the_capturer_learns_a_captured_hidden_identity() {
    // The white knight on c6 takes the hidden black piece on b8, which looks like a knight
    // and is truly a queen.
    let mut game = hidden("1q2k3/8/2N5/8/8/8/8/4K3 w - - 0 1 b8");
    let report = game.play_uci("c6b8").expect("legal capture");
    let white = report.for_audience(Audience::Player(Color::White));
    let black = report.for_audience(Audience::Player(Color::Black));
    let public = report.for_audience(Audience::Spectator);
    assert_eq!(white.captured_identity, Some(Role::Queen));
    assert_eq!(black.captured_identity, None, "the owner does not learn it");
    assert_eq!(public.captured_identity, None, "spectators do not learn it");
    let captured = public.captured.expect("a capture");
    assert_eq!(captured.square, Square::B8);
    assert_eq!(captured.shown_role, Role::Knight, "everyone saw a knight");
    assert!(captured.was_hidden);
    // Private knowledge is part of the capturer's view, and only of it.
    let view = game.view(Audience::Player(Color::White));
    assert_eq!(view.captured_identities.len(), 1);
    assert_eq!(view.captured_identities[0].role, Role::Queen);
    assert!(
        game.view(Audience::Player(Color::Black))
            .captured_identities
            .is_empty()
    );
    assert!(
        game.view(Audience::Spectator)
            .captured_identities
            .is_empty()
    );
    // Debug output of the report shows the public event only.
    assert!(!format!("{report:?}").contains("Queen"));
}

#[test]
fn a_reveal_is_public() {
    let mut game = hidden("4k3/8/8/8/8/8/8/1Q5K w - - 0 1 b1");
    let report = game.play_uci("b1c3").expect("legal");
    for audience in [
        Audience::Spectator,
        Audience::Player(Color::White),
        Audience::Player(Color::Black),
    ] {
        let reveal = report
            .for_audience(audience)
            .reveal
            .expect("the move reveals");
        assert_eq!((reveal.square, reveal.role), (Square::C3, Role::Queen));
    }
}

#[test]
fn pending_promotion_blocks_everything_but_the_choice() {
    let mut game = hidden("4k3/8/8/8/8/8/8/P3K3 w - - 0 1 a1");
    let report = game.play_uci("a1a8").expect("legal");
    let event = report.for_audience(Audience::Spectator);
    assert!(event.promotion_pending);
    assert_eq!(event.reveal.map(|r| r.role), Some(Role::Pawn));
    assert_eq!(game.pending_promotion(), Some(Square::A8));
    assert_eq!(
        game.side_to_act(),
        Color::White,
        "the mover's clock keeps running"
    );
    assert!(game.legal_moves().is_empty());
    assert_eq!(
        game.play_uci("e1e2"),
        Err(PlayError::PromotionPending(Square::A8))
    );
    assert_eq!(
        game.choose_promotion(Role::King),
        Err(PlayError::InvalidPromotionRole)
    );
    let done = game.choose_promotion(Role::Rook).expect("choice accepted");
    let done = done.for_audience(Audience::Player(Color::Black));
    assert!(done.completes_promotion);
    assert_eq!(done.uci.to_string(), "a1a8r");
    assert_eq!(game.ply(), 1);
    assert_eq!(
        game.choose_promotion(Role::Queen),
        Err(PlayError::NoPromotionPending)
    );
    assert_eq!(game.side_to_act(), Color::Black);
}

#[test]
fn flag_during_a_pending_promotion_loses_on_time() {
    let mut game = hidden("4k3/8/8/8/8/8/8/P3K1R1 w - - 0 1 a1");
    game.play_uci("a1a8").expect("legal");
    assert_eq!(
        game.flag(Color::White),
        Ok(Outcome::Win {
            winner: Color::Black,
            reason: WinReason::Timeout
        })
    );
    assert_eq!(game.choose_promotion(Role::Queen), Err(PlayError::GameOver));
}

#[test]
fn the_commitment_checks_out_after_the_game_and_not_before() {
    let shuffle = Shuffle::random().expect("OS randomness");
    let commitment = shuffle.commitment().to_hex();
    let mut game = Game::new_hidden(shuffle);
    assert_eq!(
        game.commitment().map(|c| c.to_hex()),
        Some(commitment.clone())
    );
    assert!(
        game.published_shuffle().is_none(),
        "secret while the game runs"
    );
    assert!(game.view(Audience::Spectator).shuffle.is_none());
    game.resign(Color::Black).expect("resign");
    let published = game.published_shuffle().expect("public after the end");
    assert_eq!(published.commitment, commitment);
    assert_eq!(
        verify_shuffle(&commitment, &published.salt, &published.layout),
        Ok(())
    );
    assert_eq!(
        game.view(Audience::Spectator).shuffle,
        Some(published.clone())
    );
    // Any other layout or salt fails.
    let other_layout = if published.layout.starts_with('P') {
        "RNBQBNRPPPPPPPP/rnbqbnrpppppppp"
    } else {
        "PNBQBNRRPPPPPPP/rnbqbnrpppppppp"
    };
    assert_eq!(
        verify_shuffle(&commitment, &published.salt, other_layout),
        Err(VerifyError::Mismatch)
    );
    let mut salt = published.salt.clone().into_bytes();
    salt[0] = if salt[0] == b'0' { b'1' } else { b'0' };
    assert_eq!(
        verify_shuffle(
            &commitment,
            std::str::from_utf8(&salt).expect("ascii"),
            &published.layout
        ),
        Err(VerifyError::Mismatch)
    );
    assert_eq!(
        verify_shuffle(&commitment, "zz", &published.layout),
        Err(VerifyError::Salt)
    );
}

#[test]
fn the_commitment_encoding_is_fixed() {
    // SHA-256(32 zero bytes ‖ "frontier/hidden-layout/v1:" ‖ layout), as documented.
    let layout = "RNBQBNRPPPPPPPP/rnbqbnrpppppppp";
    let shuffle = Shuffle::new(Layout::from_canonical(layout).expect("valid"), [0; 32]);
    let mut input = vec![0u8; 32];
    input.extend_from_slice(b"frontier/hidden-layout/v1:");
    input.extend_from_slice(layout.as_bytes());
    let expected = sha256_hex(&input);
    assert_eq!(shuffle.commitment().to_hex(), expected);
}

/// A small independent SHA-256 (FIPS 180-4) so the test does not trust the library's hash.
fn sha256_hex(message: &[u8]) -> String {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let mut data = message.to_vec();
    data.push(0x80);
    while data.len() % 64 != 56 {
        data.push(0);
    }
    data.extend_from_slice(&((message.len() as u64) * 8).to_be_bytes());
    for block in data.chunks(64) {
        let mut w = [0u32; 64];
        for i in 0..16 {
            w[i] = u32::from_be_bytes([
                block[4 * i],
                block[4 * i + 1],
                block[4 * i + 2],
                block[4 * i + 3],
            ]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let mut v = h;
        for i in 0..64 {
            let s1 = v[4].rotate_right(6) ^ v[4].rotate_right(11) ^ v[4].rotate_right(25);
            let ch = (v[4] & v[5]) ^ (!v[4] & v[6]);
            let t1 = v[7]
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = v[0].rotate_right(2) ^ v[0].rotate_right(13) ^ v[0].rotate_right(22);
            let maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
            let t2 = s0.wrapping_add(maj);
            v = [
                t1.wrapping_add(t2),
                v[0],
                v[1],
                v[2],
                v[3].wrapping_add(t1),
                v[4],
                v[5],
                v[6],
            ];
        }
        for i in 0..8 {
            h[i] = h[i].wrapping_add(v[i]);
        }
    }
    h.iter().map(|x| format!("{x:08x}")).collect()
}

#[test]
fn random_layouts_have_the_right_pieces_and_vary() {
    let a = Shuffle::random().expect("OS randomness");
    let b = Shuffle::random().expect("OS randomness");
    // Different salts make different commitments even for equal layouts.
    assert_ne!(a.commitment(), b.commitment());
    // Every random layout round-trips through its published form and verifies.
    for shuffle in [a, b] {
        let mut game = Game::new_hidden(shuffle);
        game.abort().expect("abort");
        let p = game.published_shuffle().expect("published");
        assert!(Layout::from_canonical(&p.layout).is_ok(), "{}", p.layout);
        assert_eq!(verify_shuffle(&p.commitment, &p.salt, &p.layout), Ok(()));
    }
}

#[test]
fn layout_strings_are_checked() {
    use frontier_rules::LayoutError;
    assert_eq!(
        Layout::from_canonical("RNBQBNRPPPPPPPP/rnbqbnrppppppp"),
        Err(LayoutError::Shape)
    );
    assert_eq!(
        Layout::from_canonical("QNBQBNRPPPPPPPP/rnbqbnrpppppppp"),
        Err(LayoutError::Composition(Color::White))
    );
    assert_eq!(
        Layout::from_canonical("RNBQBNRPPPPPPPP/RNBQBNRPPPPPPPP"),
        Err(LayoutError::Shape)
    );
}

#[test]
fn fools_mate_and_standard_endings() {
    let mut game = Game::new(Variant::Standard).expect("standard");
    for mv in ["f2f3", "e7e5", "g2g4"] {
        assert_eq!(game.play_uci(mv).expect("legal").outcome(), None);
    }
    let last = game.play_uci("d8h4").expect("mate");
    assert_eq!(
        last.outcome(),
        Some(Outcome::Win {
            winner: Color::Black,
            reason: WinReason::Checkmate
        })
    );
    assert_eq!(game.play_uci("a2a3"), Err(PlayError::GameOver));
    assert_eq!(game.resign(Color::White), Err(PlayError::GameOver));
}

#[test]
fn repetition_draw_in_standard() {
    let mut game = Game::new(Variant::Standard).expect("standard");
    let cycle = ["g1f3", "g8f6", "f3g1", "f6g8"];
    for mv in cycle.iter().chain(&cycle[..3]) {
        assert_eq!(game.play_uci(mv).expect("legal").outcome(), None);
    }
    assert_eq!(
        game.repetitions(),
        2,
        "the position after f3g1 has come twice"
    );
    game.play_uci("f6g8").expect("legal");
    // The start position has now occurred three times.
    assert_eq!(game.repetitions(), 3);
    assert_eq!(
        game.outcome(),
        Some(Outcome::Draw {
            reason: DrawReason::Repetition
        })
    );
}

#[test]
fn atomic_king_explosion_wins_and_lists_the_blast() {
    // White's knight takes the pawn on f7: the explosion removes knight and pawn and
    // every non-pawn piece around f7 — among them the black king on e8.
    let pos = Position::from_fen(
        Variant::Atomic,
        "rnbqkbnr/pppppppp/8/4N3/8/8/PPPPPPPP/RNBQKB1R w KQkq - 0 1",
    )
    .expect("valid");
    let mut game = Game::from_position(pos);
    let report = game.play_uci("e5f7").expect("legal");
    assert_eq!(
        report.outcome(),
        Some(Outcome::Win {
            winner: Color::White,
            reason: WinReason::KingExploded
        })
    );
    let blast = report.for_audience(Audience::Spectator).exploded;
    for sq in [Square::F7, Square::E8, Square::G8, Square::F8] {
        assert!(blast.contains(sq), "{sq} exploded");
    }
    assert!(
        !blast.contains(Square::E7),
        "pawns next to the blast survive"
    );
}

#[test]
fn atomic_kings_never_capture_and_touching_kings_are_safe() {
    // Kings touch: the black rook "attacks" the white king but that is no check.
    let pos =
        Position::from_fen(Variant::Atomic, "8/8/8/8/8/3k4/3K4/3r4 w - - 0 1").expect("valid");
    assert!(!pos.is_check());
    // The white king may not take the rook on d1 (it would explode itself).
    assert!(pos.parse_uci("d2d1").is_err());
}

#[test]
fn flag_against_a_bare_king_is_a_draw() {
    let pos =
        Position::from_fen(Variant::Standard, "4k3/8/8/8/8/8/8/R3K3 w - - 0 1").expect("valid");
    let mut game = Game::from_position(pos);
    assert_eq!(
        game.flag(Color::White),
        Ok(Outcome::Draw {
            reason: DrawReason::TimeoutVsInsufficientMaterial
        })
    );
    let mut game = Game::from_position(pos);
    assert_eq!(
        game.flag(Color::Black),
        Ok(Outcome::Win {
            winner: Color::White,
            reason: WinReason::Timeout
        })
    );
    // Hidden: a hidden piece could be anything, so a flag against it loses.
    let mut game = hidden("4k3/8/8/8/8/8/8/1N2K3 w - - 0 1 b1");
    assert_eq!(
        game.flag(Color::Black).map(|o| o.winner()),
        Ok(Some(Color::White))
    );
    // Atomic: only a bare king cannot win.
    let pos =
        Position::from_fen(Variant::Atomic, "4k3/8/8/8/8/8/8/1N2K3 w - - 0 1").expect("valid");
    let mut game = Game::from_position(pos);
    assert_eq!(
        game.flag(Color::Black).map(|o| o.winner()),
        Ok(Some(Color::White))
    );
}

#[test]
fn written_moves_get_typed_errors() {
    let pos = Position::new(Variant::Standard);
    assert!(matches!(pos.parse_uci("e2e5"), Err(MoveError::Illegal(_))));
    assert!(matches!(
        pos.parse_uci("e3e4"),
        Err(MoveError::NoPiece(Square::E3))
    ));
    assert!(matches!(
        pos.parse_uci("e7e5"),
        Err(MoveError::NoPiece(Square::E7))
    ));
    assert!(matches!(
        pos.parse_uci("e2e4q"),
        Err(MoveError::PromotionNotAllowed(_))
    ));
    for bad in ["", "e2", "e2e4qq", "i2i4", "e2e2", "e2e4Q", "e2e4k", "é2e4"] {
        assert!(
            matches!(pos.parse_uci(bad), Err(MoveError::Syntax(_))),
            "{bad}"
        );
    }
    let promo =
        Position::from_fen(Variant::Standard, "4k3/P7/8/8/8/8/8/4K3 w - - 0 1").expect("valid");
    assert!(matches!(
        promo.parse_uci("a7a8"),
        Err(MoveError::PromotionRequired(_))
    ));
    assert!(promo.parse_uci("a7a8n").is_ok());
    // A hidden piece's advance choice is accepted only where it might promote.
    let hid = HiddenState::from_server_fen("4k3/8/8/8/8/8/8/P3K3 w - - 0 1 a1").expect("valid");
    assert!(hid.position().parse_uci("a1a8q").is_ok());
    assert!(matches!(
        hid.position().parse_uci("a1a7q"),
        Err(MoveError::PromotionNotAllowed(_))
    ));
}

#[test]
fn fens_get_typed_errors_naming_the_field() {
    let field = |fen: &str| match Position::from_fen(Variant::Standard, fen) {
        Err(FenError::Field { field, .. }) => Some(field),
        _ => None,
    };
    assert_eq!(
        field("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBN w KQkq - 0 1"),
        Some(FenField::Placement)
    );
    assert_eq!(
        field("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1"),
        Some(FenField::Turn)
    );
    assert_eq!(
        field("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQxq - 0 1"),
        Some(FenField::Castling)
    );
    assert_eq!(
        field("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq e9 0 1"),
        Some(FenField::EnPassant)
    );
    assert_eq!(
        field("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - x 1"),
        Some(FenField::Halfmoves)
    );
    assert_eq!(
        field("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 -1"),
        Some(FenField::Fullmoves)
    );
    assert!(matches!(
        Position::from_fen(Variant::Standard, ""),
        Err(FenError::Empty)
    ));
    assert!(matches!(
        Position::from_fen(Variant::Standard, &"8/".repeat(200)),
        Err(FenError::TooLong(_))
    ));
    assert!(matches!(
        Position::from_fen(Variant::Standard, "8/8/8/8/8/8/8/8 w - - 0 1"),
        Err(FenError::Position(PositionError::MissingKing(Color::White)))
    ));
    assert!(matches!(
        Position::from_fen(Variant::Standard, "4k3/8/8/8/8/8/8/P3K3 w - - 0 1 a1"),
        Err(FenError::FieldCount { found: 7, max: 6 })
    ));
    assert!(matches!(
        Position::from_fen(Variant::Standard, "4k3/4R3/8/8/8/8/8/4K3 w - - 0 1"),
        Err(FenError::Position(PositionError::OppositeCheck))
    ));
    // Hidden: a hidden square must be a start square of its piece's colour.
    assert!(matches!(
        HiddenState::from_server_fen("4k3/8/8/8/8/8/8/n3K3 w - - 0 1 a1"),
        Err(FenError::Position(PositionError::HiddenNotOnStartSquare(
            Square::A1
        )))
    ));
    assert!(matches!(
        HiddenState::from_server_fen("4k3/8/8/8/4P3/8/8/4K3 w - - 0 1 e4"),
        Err(FenError::Position(PositionError::HiddenNotOnStartSquare(_)))
    ));
    assert!(matches!(
        HiddenState::from_server_fen("4k3/8/8/8/8/8/8/4K3 w - - 0 1 e1"),
        Err(FenError::Position(PositionError::HiddenNotOnStartSquare(
            Square::E1
        )))
    ));
    // A view must show a hidden piece as its apparent role.
    assert!(matches!(
        Position::from_fen(Variant::Hidden, "4k3/8/8/8/8/8/8/Q3K3 w - - 0 1 a1"),
        Err(FenError::Position(PositionError::HiddenNotApparent(
            Square::A1
        )))
    ));
    // Pawns may stand on their own back rank in hidden chess, not on the last rank.
    assert!(Position::from_fen(Variant::Hidden, "4k3/8/8/8/8/8/8/P3K3 w - - 0 1 -").is_ok());
    assert!(matches!(
        Position::from_fen(Variant::Hidden, "P3k3/8/8/8/8/8/8/4K3 w - - 0 1 -"),
        Err(FenError::Position(PositionError::PawnOnBackRank(
            Square::A8
        )))
    ));
    assert!(matches!(
        Position::from_fen(Variant::Standard, "4k3/8/8/8/8/8/8/P3K3 w - - 0 1"),
        Err(FenError::Position(PositionError::PawnOnBackRank(
            Square::A1
        )))
    ));
}

#[test]
fn views_are_formatted_as_hidden_fen() {
    let state = HiddenState::from_server_fen("4k3/8/8/8/8/8/8/1Q2K3 w - - 0 1 b1").expect("valid");
    // The view shows the apparent knight; the server notation the true queen.
    assert_eq!(state.position().fen(), "4k3/8/8/8/8/8/8/1N2K3 w - - 0 1 b1");
    assert_eq!(state.server_fen(), "4k3/8/8/8/8/8/8/1Q2K3 w - - 0 1 b1");
    // Debug never prints the secret.
    assert!(!format!("{state:?}").contains('Q'));
    let game = Game::from_hidden_state(state);
    assert!(!format!("{game:?}").contains('Q'));
}

#[test]
fn play_revealing_with_the_true_role_matches_the_server_game() {
    // A hidden "knight" on g1 that is truly a rook, a hidden "pawn" on e2 that is truly a
    // queen, and a hidden corner "rook" on h1 that is truly a bishop (castling reveals it).
    for (server, uci, role) in [
        ("4k3/8/8/8/8/8/4Q3/4K1R1 w - - 0 1 e2g1", "g1f3", Role::Rook),
        (
            "4k3/8/8/8/8/8/4Q3/4K1R1 w - - 0 1 e2g1",
            "e2e4",
            Role::Queen,
        ),
        ("4k3/8/8/8/8/8/8/4K2B w K - 0 1 h1", "e1g1", Role::Bishop),
    ] {
        let mut game = hidden(server);
        let public = *game.position();
        let m = public.parse_uci(uci).expect("legal");
        game.play(&m).expect("legal");
        let mut searched = public;
        searched.play_revealing(&m, role);
        assert_eq!(&searched, game.position(), "{uci}");
        assert_eq!(searched.key(), searched.compute_key(), "{uci}");
    }
}
