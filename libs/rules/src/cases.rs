//! Rules test cases as data: the perft suites' formats plus a few keywords for hand-made
//! cases that play moves and check what follows. One runner serves the `perft` tool and
//! the test suite.
//!
//! Formats (blank lines and `#` comments are skipped):
//! - one line per case: `<FEN>;D1 <n>;D2 <n>;…` (any subset of depths);
//! - records: `id NAME`, `epd FEN`, then any of these lines, applied in order:
//!   - `perft DEPTH NODES` — the leaf count from the current state;
//!   - `play MOVE…` — UCI moves played in turn (`=q` answers a pending promotion);
//!   - `fen FEN` — the public (spectator) view FEN now;
//!   - `pending SQUARE|-` — the square awaiting a promotion choice;
//!   - `halfmoves N` — the fifty-move counter now;
//!   - `outcome CODE|none` — see `Outcome::code`;
//!   - `distinct-from FEN` — this position is not the same position, for repetition, as
//!     that one.
//!
//! For hidden chess every FEN after `epd` and `distinct-from` is the server notation (true
//! board, then the hidden squares).

use crate::game::Game;
use crate::hidden::HiddenState;
use crate::perft::{perft, perft_hidden};
use crate::position::{Position, Variant};
use crate::types::Role;

/// One check or action of a case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Expected leaf count at a depth.
    Perft(u32, u64),
    /// Moves to play.
    Play(Vec<String>),
    /// Expected public view FEN.
    Fen(String),
    /// Expected pending promotion square (`-` for none).
    Pending(String),
    /// Expected fifty-move counter.
    Halfmoves(u32),
    /// Expected outcome code (`none` for none).
    Outcome(String),
    /// A FEN whose repetition key must differ from the current one.
    DistinctFrom(String),
}

/// A case: a start position and its steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// Its name (`id`), or its line number.
    pub name: String,
    /// Its FEN.
    pub fen: String,
    /// What to do and check, in order.
    pub steps: Vec<Step>,
}

impl Case {
    /// How many checks the case makes (plays are not checks).
    pub fn checks(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| !matches!(s, Step::Play(_)))
            .count()
    }
}

fn count(depth: &str, nodes: &str, line_no: usize) -> Result<Step, String> {
    let d = depth.trim_start_matches(['D', 'd']);
    match (d.parse(), nodes.parse()) {
        (Ok(d), Ok(n)) => Ok(Step::Perft(d, n)),
        _ => Err(format!("line {line_no}: bad count `{depth} {nodes}`")),
    }
}

/// Parses a case file.
pub fn parse_cases(text: &str) -> Result<Vec<Case>, String> {
    let mut cases: Vec<Case> = Vec::new();
    let mut pending_name: Option<String> = None;
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (keyword, rest) = line.split_once(' ').unwrap_or((line, ""));
        let rest = rest.trim();
        let step = match keyword {
            "id" => {
                pending_name = Some(rest.to_owned());
                continue;
            }
            "epd" => {
                cases.push(Case {
                    name: pending_name
                        .take()
                        .unwrap_or_else(|| format!("line {line_no}")),
                    fen: rest.to_owned(),
                    steps: Vec::new(),
                });
                continue;
            }
            "perft" => match rest.split_whitespace().collect::<Vec<_>>()[..] {
                [d, n] => count(d, n, line_no)?,
                _ => return Err(format!("line {line_no}: expected `perft DEPTH NODES`")),
            },
            "play" => Step::Play(rest.split_whitespace().map(str::to_owned).collect()),
            "fen" => Step::Fen(rest.to_owned()),
            "pending" => Step::Pending(rest.to_owned()),
            "halfmoves" => Step::Halfmoves(
                rest.parse()
                    .map_err(|_| format!("line {line_no}: bad half-move count"))?,
            ),
            "outcome" => Step::Outcome(rest.to_owned()),
            "distinct-from" => Step::DistinctFrom(rest.to_owned()),
            _ if line.contains(';') => {
                let mut parts = line.split(';');
                let fen = parts.next().unwrap_or_default().trim().to_owned();
                let mut steps = Vec::new();
                for part in parts {
                    match part.split_whitespace().collect::<Vec<_>>()[..] {
                        [d, n] => steps.push(count(d, n, line_no)?),
                        _ => return Err(format!("line {line_no}: expected `;D<depth> <nodes>`")),
                    }
                }
                cases.push(Case {
                    name: format!("line {line_no}"),
                    fen,
                    steps,
                });
                continue;
            }
            _ => return Err(format!("line {line_no}: `{keyword}` not understood")),
        };
        cases
            .last_mut()
            .ok_or_else(|| format!("line {line_no}: `{keyword}` before any `epd`"))?
            .steps
            .push(step);
    }
    Ok(cases)
}

/// The result of running one case.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CaseResult {
    /// Checks that held.
    pub passed: usize,
    /// One line per check that did not (or per check skipped by an earlier error).
    pub failures: Vec<String>,
}

fn load(variant: Variant, fen: &str) -> Result<Game, String> {
    match variant {
        Variant::Hidden => HiddenState::from_server_fen(fen)
            .map(Game::from_hidden_state)
            .map_err(|e| e.to_string()),
        _ => Position::from_fen(variant, fen)
            .map(Game::from_position)
            .map_err(|e| e.to_string()),
    }
}

fn repetition_key(variant: Variant, fen: &str) -> Result<u64, String> {
    load(variant, fen).map(|g| g.position().repetition_key())
}

/// Runs a case of `variant`.
pub fn run_case(variant: Variant, case: &Case) -> CaseResult {
    let mut result = CaseResult::default();
    let mut game = match load(variant, &case.fen) {
        Ok(game) => game,
        Err(e) => {
            for _ in 0..case.checks() {
                result
                    .failures
                    .push(format!("{}: invalid FEN `{}`: {e}", case.name, case.fen));
            }
            return result;
        }
    };
    let mut skip_rest: Option<String> = None;
    for step in &case.steps {
        if let Some(why) = &skip_rest {
            if !matches!(step, Step::Play(_)) {
                result
                    .failures
                    .push(format!("{}: not checked: {why}", case.name));
            }
            continue;
        }
        let failure = match step {
            Step::Play(moves) => {
                for mv in moves {
                    let played = match mv.strip_prefix('=') {
                        Some(letter) => match letter.chars().next().and_then(Role::from_char) {
                            Some(role) => game.choose_promotion(role),
                            None => {
                                skip_rest = Some(format!("bad promotion `{mv}`"));
                                break;
                            }
                        },
                        None => game.play_uci(mv),
                    };
                    if let Err(e) = played {
                        skip_rest = Some(format!("playing {mv}: {e}"));
                        break;
                    }
                }
                continue;
            }
            Step::Perft(depth, expected) => {
                let got = match game.hidden_state() {
                    Some(state) if game.pending_promotion().is_none() => {
                        perft_hidden(state, *depth)
                    }
                    _ => perft(game.position(), *depth),
                };
                (got != *expected).then(|| {
                    format!(
                        "{} depth {depth}: expected {expected}, got {got} ({})",
                        case.name, case.fen
                    )
                })
            }
            Step::Fen(expected) => {
                let got = game.view(crate::game::Audience::Spectator).fen();
                (got != *expected)
                    .then(|| format!("{}: expected view `{expected}`, got `{got}`", case.name))
            }
            Step::Pending(expected) => {
                let got = game
                    .pending_promotion()
                    .map_or_else(|| "-".to_owned(), |sq| sq.to_string());
                (got != *expected)
                    .then(|| format!("{}: expected pending {expected}, got {got}", case.name))
            }
            Step::Halfmoves(expected) => {
                let got = game.position().halfmoves();
                (got != *expected)
                    .then(|| format!("{}: expected halfmoves {expected}, got {got}", case.name))
            }
            Step::Outcome(expected) => {
                let got = game
                    .outcome()
                    .map_or_else(|| "none".to_owned(), |o| o.code());
                (got != *expected)
                    .then(|| format!("{}: expected outcome {expected}, got {got}", case.name))
            }
            Step::DistinctFrom(other) => match repetition_key(variant, other) {
                Err(e) => Some(format!("{}: invalid FEN `{other}`: {e}", case.name)),
                Ok(key) => (key == game.position().repetition_key()).then(|| {
                    format!(
                        "{}: the position counts as the same as `{other}`",
                        case.name
                    )
                }),
            },
        };
        match failure {
            Some(f) => result.failures.push(f),
            None => result.passed += 1,
        }
    }
    result
}
