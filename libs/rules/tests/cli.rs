//! The `perft` tool's interface, as other tools drive it.

use std::process::Command;

fn perft(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_perft"))
        .args(args)
        .output()
        .expect("run perft");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn data(name: &str) -> String {
    format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn fen_mode_prints_the_count_alone_on_the_last_line() {
    let (code, out) = perft(&[
        "--variant",
        "standard",
        "--depth",
        "3",
        "--fen",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    ]);
    assert_eq!(code, 0);
    assert_eq!(out.lines().last(), Some("8902"));
}

#[test]
fn hidden_fen_mode_takes_the_server_notation() {
    // The hidden a1 "rook" is a pawn: a1a8 counts four times (see hidden-rules.perft).
    let (code, out) = perft(&[
        "--variant",
        "hidden",
        "--depth",
        "1",
        "--fen",
        "4k3/8/8/8/8/8/8/P3K3 w - - 0 1 a1",
    ]);
    assert_eq!(code, 0);
    assert_eq!(out.lines().last(), Some("18"));
}

#[test]
fn epd_mode_checks_every_file() {
    for (variant, file) in [
        ("standard", "standard.perft"),
        ("atomic", "atomic.perft"),
        ("atomic", "atomic-random.epd"),
        ("hidden", "hidden-random.epd"),
        ("hidden", "hidden-rules.perft"),
    ] {
        let (code, out) = perft(&["--variant", variant, "--epd", &data(file)]);
        let last = out.lines().last().unwrap_or_default();
        assert!(last.ends_with(" passed, 0 failed"), "{file}: {out}");
        assert_eq!(code, 0, "{file}");
    }
}

#[test]
fn epd_mode_reports_failures_and_exits_1() {
    let dir = std::env::temp_dir().join(format!("frontier-perft-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("wrong.epd");
    std::fs::write(
        &file,
        "# a comment\n\nrnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1;D1 20;D2 401\n",
    )
    .expect("write");
    let (code, out) = perft(&["--variant", "standard", "--epd", &file.to_string_lossy()]);
    assert_eq!(code, 1);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].contains("expected 401, got 400"), "{out}");
    assert_eq!(lines[1], "1 passed, 1 failed");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bad_arguments_exit_2() {
    assert_eq!(
        perft(&["--variant", "crazyhouse", "--depth", "1", "--fen", "x"]).0,
        2
    );
    assert_eq!(perft(&["--variant", "standard"]).0, 2);
    assert_eq!(
        perft(&["--variant", "standard", "--depth", "1", "--fen", "nonsense"]).0,
        2
    );
}
