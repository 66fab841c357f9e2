//! `analyse`: every legal move of the seat's view scored, best first, reproducible.

use frontier_engine::{ANALYSIS_MARGIN, SeatView, ThinkError, analyse};
use frontier_rules::{Color, Position, Variant};

#[test]
fn every_legal_move_is_scored_best_first_and_reproducibly() {
    for variant in Variant::ALL {
        let pos = Position::new(variant);
        let view = if variant == Variant::Hidden {
            SeatView::hidden(Color::White, pos, None, Vec::new(), &[], &[]).expect("a view")
        } else {
            SeatView::open(Color::White, pos, Vec::new())
        };
        let a = analyse(&view, 2_000, 1).expect("analysed");
        assert_eq!(a.moves.len(), pos.legal_move_list().len(), "{variant}");
        assert!(
            a.moves.windows(2).all(|w| w[0].1 >= w[1].1),
            "{variant}: best first"
        );
        assert!(
            a.nodes > 0 && a.nodes <= 2_000 + 64,
            "{variant}: {} nodes",
            a.nodes
        );
        assert_eq!(a, analyse(&view, 2_000, 1).expect("analysed"), "{variant}");
        let (_, best) = a.best().expect("a best move");
        // Moves within the margin of the best are exact; the rest are bounds below it.
        assert!(a.moves.iter().all(|(_, s)| *s <= best), "{variant}");
        assert!(
            a.moves
                .iter()
                .filter(|(_, s)| *s > best - ANALYSIS_MARGIN)
                .count()
                >= 1
        );
    }
}

#[test]
fn analyse_refuses_what_think_refuses() {
    let view = SeatView::open(Color::Black, Position::new(Variant::Standard), Vec::new());
    assert_eq!(analyse(&view, 100, 0), Err(ThinkError::NotToAct));
    // Fool's mate: White is mated.
    let mated = Position::from_fen(
        Variant::Standard,
        "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3",
    )
    .expect("a position");
    let view = SeatView::open(Color::White, mated, Vec::new());
    assert_eq!(analyse(&view, 100, 0), Err(ThinkError::NoLegalMove));
}
