//! Every rules data file, through the one case runner the `perft` tool uses.
//!
//! The files in `tests/data` are copies of `shared/testdata` (published suites and
//! independently counted random positions) plus the hand-made `hidden-rules.perft`.
//! `standard-deep.perft` (10⁷–10⁸ nodes a position) runs in `make perft`, release mode.

use frontier_rules::Variant;
use frontier_rules::cases::{parse_cases, run_case};

fn check_file(variant: Variant, name: &str) {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    let cases = parse_cases(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(!cases.is_empty(), "{name} has cases");
    let mut passed = 0;
    let mut failures = Vec::new();
    for case in &cases {
        let result = run_case(variant, case);
        passed += result.passed;
        failures.extend(result.failures);
    }
    assert!(failures.is_empty(), "{name}:\n{}", failures.join("\n"));
    assert!(passed > 0, "{name}: no check ran");
}

#[test]
fn standard_suite() {
    check_file(Variant::Standard, "standard.perft");
}

#[test]
fn atomic_suite() {
    check_file(Variant::Atomic, "atomic.perft");
}

#[test]
fn atomic_random_positions() {
    check_file(Variant::Atomic, "atomic-random.epd");
}

#[test]
fn hidden_random_positions() {
    check_file(Variant::Hidden, "hidden-random.epd");
}

#[test]
fn hidden_hand_made_rules() {
    check_file(Variant::Hidden, "hidden-rules.perft");
}

#[test]
fn a_wrong_count_is_reported() {
    // The runner must be able to fail: a deliberately wrong count and a bad FEN.
    let cases = parse_cases(
        "id wrong\nepd rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq -\nperft 1 21\n\
         8/8/8/8/8/8/8/8 w - -;D1 1\n",
    )
    .expect("well-formed");
    let wrong = run_case(Variant::Standard, &cases[0]);
    assert_eq!(wrong.passed, 0);
    assert_eq!(wrong.failures.len(), 1);
    assert!(
        wrong.failures[0].contains("expected 21, got 20"),
        "{:?}",
        wrong.failures
    );
    let invalid = run_case(Variant::Standard, &cases[1]);
    assert_eq!(invalid.failures.len(), 1);
    assert!(
        invalid.failures[0].contains("no king"),
        "{:?}",
        invalid.failures
    );
}
