//! Engine speed in nodes per second, per variant: `make bench`. Figures go in
//! docs/benchmarks.md next to the perft figures.

use divan::{Bencher, black_box};
use frontier_engine::{Level, Limits, Request, SeatView, think};
use frontier_rules::{Color, Position, Variant};

/// Nodes of one measured search.
const NODES: u64 = 200_000;

const MIDDLE_GAME: &str = "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N1PN2/PP2BPPP/R2QKB1R w KQ - 0 8";

fn main() {
    frontier_rules::init_tables();
    divan::main();
}

fn search(bencher: Bencher<'_, '_>, view: SeatView) {
    bencher
        .counter(divan::counter::ItemsCount::new(NODES as usize))
        .bench(|| {
            let thought = think(&Request {
                view: &view,
                level: Level::Hard,
                clock: None,
                seed: 1,
                limits: Some(Limits {
                    nodes: Some(NODES),
                    deadline: None,
                }),
            })
            .expect("the side to move has moves");
            black_box(thought)
        });
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn standard_middle_game(b: Bencher<'_, '_>) {
    let pos = Position::from_fen(Variant::Standard, MIDDLE_GAME).expect("valid FEN");
    search(b, SeatView::open(Color::White, pos, Vec::new()));
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn atomic_middle_game(b: Bencher<'_, '_>) {
    let pos = Position::from_fen(Variant::Atomic, MIDDLE_GAME).expect("valid FEN");
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
