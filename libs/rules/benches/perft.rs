//! Perft speed in nodes per second: `make bench`. Figures go in docs/benchmarks.md.

use divan::{Bencher, black_box};
use frontier_rules::{HiddenState, Layout, Position, Variant, perft, perft_full, perft_hidden};

const KIWIPETE: &str = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1";

fn main() {
    frontier_rules::init_tables();
    divan::main();
}

fn count(bencher: Bencher<'_, '_>, nodes: u64, f: impl Fn() -> u64 + Sync) {
    bencher
        .counter(divan::counter::ItemsCount::new(nodes as usize))
        .bench(|| assert_eq!(black_box(f()), nodes));
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn standard_start_d5_bulk(b: Bencher<'_, '_>) {
    let pos = Position::new(Variant::Standard);
    count(b, 4_865_609, || perft(&pos, 5));
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn standard_start_d5_full(b: Bencher<'_, '_>) {
    let pos = Position::new(Variant::Standard);
    count(b, 4_865_609, || perft_full(&pos, 5));
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn kiwipete_d4_bulk(b: Bencher<'_, '_>) {
    let pos = Position::from_fen(Variant::Standard, KIWIPETE).expect("Kiwipete is valid");
    count(b, 4_085_603, || perft(&pos, 4));
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn kiwipete_d4_full(b: Bencher<'_, '_>) {
    let pos = Position::from_fen(Variant::Standard, KIWIPETE).expect("Kiwipete is valid");
    count(b, 4_085_603, || perft_full(&pos, 4));
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn atomic_start_d4_bulk(b: Bencher<'_, '_>) {
    let pos = Position::new(Variant::Atomic);
    count(b, 197_326, || perft(&pos, 4));
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn atomic_start_d4_full(b: Bencher<'_, '_>) {
    let pos = Position::new(Variant::Atomic);
    count(b, 197_326, || perft_full(&pos, 4));
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn hidden_start_d4_bulk(b: Bencher<'_, '_>) {
    // The unshuffled layout: the count is the standard one, which checks the figure.
    let state = HiddenState::new(Layout::unshuffled());
    count(b, 197_281, || perft_hidden(&state, 4));
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn hidden_shuffled_start_d4_bulk(b: Bencher<'_, '_>) {
    // A fixed shuffle (from tests/data/hidden-rules.perft): reveals change the tree, so
    // the count is taken once, untimed, and every timed run must match it.
    let layout = Layout::from_canonical("PRQPBPRNNPPBPPP/bppbppnprnrppqp").expect("a valid layout");
    let state = HiddenState::new(layout);
    let nodes = perft_hidden(&state, 4);
    count(b, nodes, || perft_hidden(&state, 4));
}
