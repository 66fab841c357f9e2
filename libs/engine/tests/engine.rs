//! The computer player against positions with known answers, on node budgets (no
//! wall-clock assertions): mates in each variant, not hanging a queen, determinism, a
//! hidden view's decision depending on the view alone, promotion answers and view errors.

use frontier_engine::{
    Decision, Level, Limits, Request, SeatView, ThinkError, Thought, ViewError, think,
};
use frontier_rules::{Audience, Color, Game, HiddenState, Move, Position, Role, Square, Variant};

fn request(view: &SeatView, level: Level, nodes: u64, seed: u64) -> Request<'_> {
    Request {
        view,
        level,
        clock: None,
        seed,
        limits: Some(Limits {
            nodes: Some(nodes),
            deadline: None,
        }),
    }
}

fn decide(view: &SeatView, level: Level, nodes: u64) -> Thought {
    think(&request(view, level, nodes, 1)).expect("the seat is to move and has moves")
}

fn open_view(variant: Variant, fen: &str) -> SeatView {
    let pos = Position::from_fen(variant, fen).expect("test FEN is valid");
    SeatView::open(pos.turn(), pos, Vec::new())
}

fn the_move(thought: &Thought) -> Move {
    match thought.decision {
        Decision::Move(m) => m,
        Decision::Promote(role) => panic!("expected a move, got a promotion to {role:?}"),
    }
}

/// Whether the side that just moved has won: the mover's opponent is mated or its king
/// exploded. Judged on the public position only (the legal moves never depend on a hidden
/// identity).
fn is_won_for_mover(pos: &Position) -> bool {
    pos.exploded_king() == Some(pos.turn()) || (pos.is_check() && !pos.has_legal_move())
}

/// Plays `m` with a hidden mover landing as the role it shows: mate checks below hold for
/// every identity, so any one will do for the replies.
fn after(pos: &Position, m: &Move) -> Position {
    let mut next = *pos;
    next.play_revealing(m, m.promotion().unwrap_or(m.role()));
    next
}

/// Whether `m` forces a win within `n` of the mover's moves (1: at once).
fn forces_win(pos: &Position, m: &Move, n: u32) -> bool {
    let next = after(pos, m);
    if is_won_for_mover(&next) {
        return true;
    }
    if n <= 1 || next.exploded_king().is_some() {
        return false;
    }
    let replies = next.legal_move_list();
    !replies.is_empty()
        && replies.iter().all(|r| {
            let again = after(&next, r);
            again.exploded_king().is_none()
                && again
                    .legal_move_list()
                    .iter()
                    .any(|m2| forces_win(&again, m2, n - 1))
        })
}

fn has_win_in(pos: &Position, n: u32) -> bool {
    pos.legal_move_list().iter().any(|m| forces_win(pos, m, n))
}

fn assert_finds_mate(view: &SeatView, n: u32) {
    let pos = view.position;
    assert!(has_win_in(&pos, n), "test position has a win in {n}");
    if n > 1 {
        assert!(!has_win_in(&pos, n - 1), "test position has no quicker win");
    }
    for level in Level::ALL {
        let thought = decide(view, level, 60_000);
        let m = the_move(&thought);
        assert!(
            forces_win(&pos, &m, n),
            "{level:?} played {m:?} in {}, which does not force the win in {n}",
            pos.fen()
        );
    }
}

#[test]
fn standard_mates_in_one_and_two() {
    assert_finds_mate(
        &open_view(Variant::Standard, "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"),
        1,
    );
    assert_finds_mate(
        &open_view(Variant::Standard, "k7/8/2K5/8/8/8/8/7R w - - 0 1"),
        2,
    );
}

#[test]
fn atomic_explodes_the_king_at_once_and_in_two() {
    // Rxd7 explodes the knight next to the king, and the king with it.
    let view = open_view(Variant::Atomic, "4k3/3n4/8/8/8/8/8/3RK3 w - - 0 1");
    assert_finds_mate(&view, 1);
    // The knight on e8 shields the back rank, so there is no capture next to the king yet;
    // Rh7 threatens one on b7 (or on a7 once b7 moves) and nothing stops it.
    assert_finds_mate(
        &open_view(Variant::Atomic, "k3N3/pp6/8/8/8/8/8/K6R w - - 0 1"),
        2,
    );
}

fn hidden_view(fen: &str, reveals: &[(Color, Role)]) -> SeatView {
    let pos = Position::from_fen(Variant::Hidden, fen).expect("test FEN is valid");
    SeatView::hidden(pos.turn(), pos, None, Vec::new(), reveals, &[])
        .expect("test view accounts correctly")
}

#[test]
fn hidden_mates_that_hold_whatever_the_identities() {
    // Scholar's mate: Qxf7# is mate whatever the hidden pieces are, since legality is
    // judged on apparent roles.
    let scholar = hidden_view(
        "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4 \
         a1b1c1g1h1a2b2c2d2f2g2h2a7b7c7d7f7g7h7a8c8d8f8h8",
        &[
            (Color::White, Role::Pawn),
            (Color::White, Role::Bishop),
            (Color::White, Role::Queen),
            (Color::Black, Role::Pawn),
            (Color::Black, Role::Knight),
            (Color::Black, Role::Knight),
        ],
    );
    assert_finds_mate(&scholar, 1);
    // Black's only other piece is hidden on h7 and blocked by the pawn on h6: whatever it
    // is, it cannot move, so Kb6 Kb8 Re8# is forced.
    let blocked = hidden_view(
        "k7/7p/2K4P/8/8/8/8/4R3 w - - 0 1 h7",
        &[(Color::White, Role::Pawn), (Color::White, Role::Rook)],
    );
    assert_finds_mate(&blocked, 2);
}

/// The white queen survives every reply to the engine's move.
fn queen_survives(view: &SeatView) {
    let pos = view.position;
    let m = the_move(&decide(view, Level::Hard, 40_000));
    let next = after(&pos, &m);
    let queen = |p: &Position| {
        (p.board().by_role(Role::Queen) & p.board().by_color(Color::White)).nonempty()
    };
    assert!(queen(&next), "{m:?} gave the queen away in {}", pos.fen());
    for r in next.legal_move_list() {
        assert!(
            queen(&after(&next, &r)),
            "after {m:?}, {r:?} wins the queen in {}",
            pos.fen()
        );
    }
}

#[test]
fn does_not_hang_its_queen() {
    // The pawn on c5 attacks the queen on d4. In atomic chess taking it would explode the
    // queen, so the queen must step away there.
    for variant in Variant::ALL {
        queen_survives(&open_view(variant, "4k3/8/8/2p5/3Q4/8/8/4K3 w - - 0 1"));
    }
    // The knight on f6 attacks the queen on h5; g6 is guarded by the pawn on h7.
    queen_survives(&open_view(
        Variant::Standard,
        "rnbqkb1r/pppp1ppp/5n2/4p2Q/4P3/8/PPPP1PPP/RNB1KBNR w KQkq - 2 3",
    ));
}

#[test]
fn same_request_and_seed_give_the_same_decision() {
    let views = [
        open_view(
            Variant::Standard,
            "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
        ),
        open_view(
            Variant::Atomic,
            "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2",
        ),
        SeatView::hidden(
            Color::White,
            Position::new(Variant::Hidden),
            None,
            Vec::new(),
            &[],
            &[],
        )
        .expect("the start accounts correctly"),
    ];
    for view in &views {
        for level in Level::ALL {
            for seed in [1, 99] {
                let a = think(&request(view, level, 5_000, seed)).expect("to move");
                let b = think(&request(view, level, 5_000, seed)).expect("to move");
                assert_eq!(a, b, "{level:?} seed {seed} in {}", view.position.fen());
            }
        }
    }
}

#[test]
fn a_hidden_decision_depends_on_the_view_only() {
    // The same public position over two different true boards: every hidden identity is
    // swapped around, so the server states differ but a seat's view does not.
    let true_a = "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2 \
                  a1b1c1d1f1g1h1a2b2c2d2f2g2h2a7b7c7d7f7g7h7a8b8c8d8f8g8h8";
    let true_b = "bnpqkrpp/prnp1bpp/8/4p3/4P3/8/NRPB1PPP/PPNQKBPR w KQkq - 0 2 \
                  a1b1c1d1f1g1h1a2b2c2d2f2g2h2a7b7c7d7f7g7h7a8b8c8d8f8g8h8";
    let reveals = [(Color::White, Role::Pawn), (Color::Black, Role::Pawn)];
    let mut decisions = Vec::new();
    for server_fen in [true_a, true_b] {
        let state = HiddenState::from_server_fen(server_fen).expect("valid server notation");
        let game = Game::from_hidden_state(state);
        let seen = game.view(Audience::Player(Color::White));
        let view = SeatView::hidden(
            Color::White,
            seen.position,
            seen.pending_promotion,
            Vec::new(),
            &reveals,
            &[],
        )
        .expect("the view accounts correctly");
        for level in Level::ALL {
            let thought = think(&request(&view, level, 6_000, 5)).expect("to move");
            let m = the_move(&thought);
            // The decision is also a legal move of the real game.
            let mut real = game.clone();
            real.play(&m).expect("the engine's move is legal");
            decisions.push((level, thought.decision));
        }
    }
    let (a, b) = decisions.split_at(3);
    assert_eq!(a, b);
}

#[test]
fn hidden_view_accounting_errors() {
    let start = Position::new(Variant::Hidden);
    assert_eq!(
        SeatView::hidden(
            Color::White,
            start,
            None,
            Vec::new(),
            &[(Color::White, Role::Queen), (Color::White, Role::Queen)],
            &[],
        ),
        Err(ViewError::Overcounted {
            color: Color::White,
            role: Role::Queen,
        })
    );
    assert_eq!(
        SeatView::hidden(
            Color::White,
            start,
            None,
            Vec::new(),
            &[],
            &[Role::Knight, Role::Knight, Role::Knight],
        ),
        Err(ViewError::Overcounted {
            color: Color::Black,
            role: Role::Knight,
        })
    );
    // Thirty hidden pieces on the board, but one of White's identities already revealed.
    assert_eq!(
        SeatView::hidden(
            Color::White,
            start,
            None,
            Vec::new(),
            &[(Color::White, Role::Rook)],
            &[],
        ),
        Err(ViewError::TooManyHidden(Color::White))
    );
}

#[test]
fn answers_a_pending_promotion() {
    // The hidden a1 "rook" is a pawn: it runs up the open a-file and must promote.
    let state = HiddenState::from_server_fen("4k3/8/8/8/8/8/8/P3K3 w - - 0 1 a1")
        .expect("valid server notation");
    let mut game = Game::from_hidden_state(state);
    game.play_uci("a1a8").expect("the a1 piece moves as a rook");
    let seen = game.view(Audience::Player(Color::White));
    let square = seen.pending_promotion.expect("a promotion is pending");
    assert_eq!(square, Square::A8);
    let view = SeatView::hidden(
        Color::White,
        seen.position,
        seen.pending_promotion,
        Vec::new(),
        &[(Color::White, Role::Pawn)],
        &[],
    )
    .expect("the view accounts correctly");
    for level in Level::ALL {
        let thought = decide(&view, level, 1_000);
        assert_eq!(thought.decision, Decision::Promote(Role::Queen));
    }
    game.choose_promotion(Role::Queen).expect("a valid choice");
}

#[test]
fn a_promotion_that_would_stalemate_is_not_a_queen() {
    // A queen on a8 would leave the king on c7 no move and no check (b6 and d6 are the c5
    // pawn's, d7 the white king's, the rest the queen's); a rook leaves it b7.
    let state = HiddenState::from_server_fen("8/2k5/4K3/2P5/8/8/8/P7 w - - 0 1 a1")
        .expect("valid server notation");
    let mut game = Game::from_hidden_state(state);
    game.play_uci("a1a8").expect("the a1 piece moves as a rook");
    let seen = game.view(Audience::Player(Color::White));
    let view = SeatView::hidden(
        Color::White,
        seen.position,
        seen.pending_promotion,
        Vec::new(),
        &[(Color::White, Role::Pawn)],
        &[],
    )
    .expect("the view accounts correctly");
    let Decision::Promote(role) = decide(&view, Level::Hard, 1_000).decision else {
        panic!("expected a promotion answer");
    };
    game.choose_promotion(role).expect("a valid choice");
    assert!(
        !matches!(
            game.outcome(),
            Some(frontier_rules::Outcome::Draw {
                reason: frontier_rules::DrawReason::Stalemate
            })
        ),
        "{role:?} stalemated"
    );
}

#[test]
fn refuses_when_it_is_not_the_seats_turn_or_there_is_no_move() {
    let pos = Position::new(Variant::Standard);
    let view = SeatView::open(Color::Black, pos, Vec::new());
    assert_eq!(
        think(&request(&view, Level::Easy, 100, 0)),
        Err(ThinkError::NotToAct)
    );
    let mated = open_view(Variant::Standard, "R5k1/5ppp/8/8/8/8/8/6K1 b - - 0 1");
    assert_eq!(
        think(&request(&mated, Level::Hard, 100, 0)),
        Err(ThinkError::NoLegalMove)
    );
}
