//! Engine speed in nodes per second, per variant: `make bench`. Figures go in
//! docs/benchmarks.md next to the perft figures.

use divan::{Bencher, black_box};
use frontier_engine::{Level, Limits, Request, SeatView, think};
use frontier_rules::{Color, Position, Variant};

/// Nodes of one measured search.
const NODES: u64 = 200_000;

const MIDDLE_GAME: &str = "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N1PN2/PP2BPPP/R2QKB1R w KQ - 0 8";

/// The main line of atomic chess, 1.Nf3 f6 (the middle game above, and 1.Nf3 Nf6, are
/// quick wins in atomic chess: the search would stop at the mate).
const ATOMIC_OPENING: &str = "rnbqkbnr/ppppp1pp/5p2/8/8/5N2/PPPPPPPP/RNBQKB1R w KQkq - 0 2";

fn main() {
    frontier_rules::init_tables();
    divan::main();
}

fn search(bencher: Bencher<'_, '_>, view: SeatView) {
    let request = Request {
        view: &view,
        level: Level::Hard,
        clock: None,
        seed: 1,
        limits: Some(Limits {
            nodes: Some(NODES),
            deadline: None,
        }),
    };
    // The search is deterministic on a node budget: count the nodes it really visits (a
    // forced mate ends it early).
    let nodes = think(&request).expect("the side to move has moves").nodes;
    bencher
        .counter(divan::counter::ItemsCount::new(nodes as usize))
        .bench(|| black_box(think(&request).expect("the side to move has moves")));
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn standard_middle_game(b: Bencher<'_, '_>) {
    let pos = Position::from_fen(Variant::Standard, MIDDLE_GAME).expect("valid FEN");
    search(b, SeatView::open(Color::White, pos, Vec::new()));
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn atomic_opening(b: Bencher<'_, '_>) {
    let pos = Position::from_fen(Variant::Atomic, ATOMIC_OPENING).expect("valid FEN");
    search(b, SeatView::open(Color::White, pos, Vec::new()));
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn hidden_start(b: Bencher<'_, '_>) {
    let view = SeatView::hidden(
        Color::White,
        Position::new(Variant::Hidden),
        None,
        Vec::new(),
        &[],
        &[],
    )
    .expect("the start accounts correctly");
    search(b, view);
}
