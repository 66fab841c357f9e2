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

use std::fmt::Write as _;
use std::process::ExitCode;

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

/// A position from a test file with its expected counts.
struct Case {
    name: String,
    fen: String,
    counts: Vec<(u32, u64)>,
}

fn parse_count(depth: &str, nodes: &str, line_no: usize) -> Result<(u32, u64), String> {
    let depth = depth.trim_start_matches(['D', 'd']);
    match (depth.parse(), nodes.parse()) {
        (Ok(d), Ok(n)) => Ok((d, n)),
        _ => Err(format!("line {line_no}: bad count `{depth} {nodes}`")),
    }
}

fn parse_cases(text: &str) -> Result<Vec<Case>, String> {
    let mut cases: Vec<Case> = Vec::new();
    let mut pending_name: Option<String> = None;
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix("id ") {
            pending_name = Some(name.trim().to_owned());
        } else if let Some(fen) = line.strip_prefix("epd ") {
            cases.push(Case {
                name: pending_name
                    .take()
                    .unwrap_or_else(|| format!("line {line_no}")),
                fen: fen.trim().to_owned(),
                counts: Vec::new(),
            });
        } else if let Some(rest) = line.strip_prefix("perft ") {
            let mut parts = rest.split_whitespace();
            let (Some(d), Some(n), None) = (parts.next(), parts.next(), parts.next()) else {
                return Err(format!("line {line_no}: expected `perft DEPTH NODES`"));
            };
            let count = parse_count(d, n, line_no)?;
            cases
                .last_mut()
                .ok_or_else(|| format!("line {line_no}: `perft` before any `epd`"))?
                .counts
                .push(count);
        } else if line.contains(';') {
            let mut parts = line.split(';');
            let fen = parts.next().unwrap_or_default().trim().to_owned();
            let mut counts = Vec::new();
            for part in parts {
                let mut words = part.split_whitespace();
                let (Some(d), Some(n), None) = (words.next(), words.next(), words.next()) else {
                    return Err(format!("line {line_no}: expected `;D<depth> <nodes>`"));
                };
                counts.push(parse_count(d, n, line_no)?);
            }
            cases.push(Case {
                name: format!("line {line_no}"),
                fen,
                counts,
            });
        } else {
            return Err(format!("line {line_no}: not understood"));
        }
    }
    Ok(cases)
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
            let (mut passed, mut failed) = (0u32, 0u32);
            let mut out = String::new();
            for case in &cases {
                let root = match Root::parse(args.variant, &case.fen) {
                    Ok(root) => root,
                    Err(e) => {
                        failed += case.counts.len() as u32;
                        let _ =
                            writeln!(out, "FAIL {}: invalid FEN `{}`: {e}", case.name, case.fen);
                        continue;
                    }
                };
                for &(depth, expected) in &case.counts {
                    let got = root.count(depth);
                    if got == expected {
                        passed += 1;
                    } else {
                        failed += 1;
                        let _ = writeln!(
                            out,
                            "FAIL {} depth {depth}: expected {expected}, got {got} ({})",
                            case.name, case.fen
                        );
                    }
                }
            }
            print!("{out}");
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
