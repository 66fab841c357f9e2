//! `perft`: counts move-tree leaves, or checks a file of expected counts.
//!
//! ```text
//! perft --variant standard|atomic|hidden --depth N --fen "<FEN>"
//! perft --variant V --epd FILE
//! ```
//!
//! With `--fen` the node count is printed alone on the last line. With `--epd` every count
//! in the file is checked, one line is printed per failure, and the last line is
//! `N passed, M failed`; the exit code is 1 if any failed, 2 for bad arguments or input.
//! For hidden chess the FEN is the server notation (true board, then the hidden squares).

use std::process::ExitCode;

use frontier_rules::cases::{parse_cases, run_case};
use frontier_rules::{HiddenState, Position, Variant, perft, perft_hidden};

const USAGE: &str =
    "usage: perft --variant standard|atomic|hidden (--depth N --fen FEN [--divide] | --epd FILE)";

struct Args {
    variant: Variant,
    depth: Option<u32>,
    fen: Option<String>,
    epd: Option<String>,
    divide: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut variant = None;
    let mut depth = None;
    let mut fen = None;
    let mut epd = None;
    let mut divide = false;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--variant" => variant = Some(value()?.parse::<Variant>().map_err(|e| e.to_string())?),
            "--depth" => {
                let v = value()?;
                depth = Some(v.parse::<u32>().map_err(|_| format!("bad depth `{v}`"))?);
            }
            "--fen" => fen = Some(value()?),
            "--epd" => epd = Some(value()?),
            "--divide" => divide = true,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    let variant = variant.ok_or("--variant is required")?;
    Ok(Args {
        variant,
        depth,
        fen,
        epd,
        divide,
    })
}

/// One position to count: either a standard/atomic position or a hidden server state.
enum Root {
    Plain(Position),
    Hidden(Box<HiddenState>),
}

impl Root {
    fn parse(variant: Variant, fen: &str) -> Result<Root, String> {
        match variant {
            Variant::Hidden => HiddenState::from_server_fen(fen)
                .map(|s| Root::Hidden(Box::new(s)))
                .map_err(|e| e.to_string()),
            _ => Position::from_fen(variant, fen)
                .map(Root::Plain)
                .map_err(|e| e.to_string()),
        }
    }

    fn count(&self, depth: u32) -> u64 {
        match self {
            Root::Plain(pos) => perft(pos, depth),
            Root::Hidden(state) => perft_hidden(state, depth),
        }
    }
}

fn run() -> Result<bool, String> {
    let args = parse_args()?;
    match (&args.fen, &args.epd, args.depth) {
        (Some(fen), None, Some(depth)) => {
            let root = Root::parse(args.variant, fen)?;
            if let (true, Root::Plain(pos)) = (args.divide, &root) {
                for (uci, nodes) in frontier_rules::divide(pos, depth) {
                    println!("{uci} {nodes}");
                }
            }
            println!("{}", root.count(depth));
            Ok(true)
        }
        (None, Some(path), None) => {
            let text =
                std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
            let cases = parse_cases(&text)?;
            let (mut passed, mut failed) = (0usize, 0usize);
            for case in &cases {
                let result = run_case(args.variant, case);
                for failure in &result.failures {
                    println!("FAIL {failure}");
                }
                passed += result.passed;
                failed += result.failures.len();
            }
            println!("{passed} passed, {failed} failed");
            Ok(failed == 0)
        }
        _ => Err("give either --depth and --fen, or --epd".into()),
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("perft: {message}");
            }
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}
