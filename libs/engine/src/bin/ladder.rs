//! `ladder`: self-play matches between the engine's levels (and a random mover, and Debian's
//! Stockfish for standard chess), reporting each level's score with an error bar, an SPRT
//! verdict, and think times. Not part of `make test`: run with `make ladder`.
//!
//! A binary may do I/O; the library may not. The Stockfish driver (UCI over a child
//! process's stdin/stdout) therefore lives here.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use frontier_engine::{Decision, Level, Limits, Request, SeatView, think};
use frontier_rules::{Audience, Color, Game, Layout, Outcome, Position, Role, Shuffle, Variant};

const HELP: &str = "\
ladder — engine level matches with SPRT

USAGE: ladder [OPTIONS]

OPTIONS:
  --variant V       standard | atomic | hidden | all            [default: all]
  --pairing P       easy-random | medium-easy | hard-medium | hard-stockfish | all
                    (all = the first three; hard-stockfish runs only for standard)
                                                                 [default: all]
  --games N         most games per pairing (pairs of colour-swapped games) [default: 200]
  --jobs N          games played in parallel                     [default: 1]
  --plies N         random opening plies before the match starts [default: 4]
  --seed N          seed of openings, hidden layouts and engine choices [default: 1]
  --max-plies N     a game still running after N plies is adjudicated a draw [default: 400]
  --minutes N       stop starting new games of a pairing after N minutes [default: 30]
  --no-sprt         play all games even when the SPRT has decided
  --stockfish PATH  the Stockfish binary                         [default: stockfish]
  --sf-movetime MS  Stockfish's time per move                    [default: 100]
  --balanced CP     re-draw an opening a quick search (20 000 nodes) scores beyond CP
                    centipawns for either side (standard and atomic; default: off)
  -h, --help        this text

Engine levels play on their node budgets only (no time cap), so a run is reproducible
but for the order in which parallel games finish.

SPRT: per pairing, H0: score = target, H1: score = target + delta (delta 0.10, or 0.04
for the 95% target), alpha = beta = 0.05, log-likelihood ratio by the normal
approximation (the GSPRT of fishtest) with the variance floored at s1(1-s1).";

#[derive(Debug, Clone, Copy, PartialEq)]
enum Player {
    Random,
    Engine(Level),
    Stockfish,
}

impl Player {
    fn name(self) -> String {
        match self {
            Player::Random => "random".to_owned(),
            Player::Engine(level) => level.name().to_owned(),
            Player::Stockfish => "stockfish".to_owned(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Pairing {
    /// The player under test.
    hero: Player,
    /// Its opponent.
    villain: Player,
    /// The score the hero must reach.
    target: f64,
}

#[derive(Debug, Clone)]
struct Options {
    variants: Vec<Variant>,
    pairings: Vec<String>,
    games: usize,
    jobs: usize,
    plies: usize,
    seed: u64,
    max_plies: usize,
    minutes: u64,
    sprt: bool,
    stockfish: String,
    sf_movetime: u64,
    balanced: Option<i32>,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        variants: Variant::ALL.to_vec(),
        pairings: vec![
            "easy-random".into(),
            "medium-easy".into(),
            "hard-medium".into(),
        ],
        games: 200,
        jobs: 1,
        plies: 4,
        seed: 1,
        max_plies: 400,
        minutes: 30,
        sprt: true,
        stockfish: "stockfish".into(),
        sf_movetime: 100,
        balanced: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        let num = |s: String| s.parse::<u64>().map_err(|e| format!("{s}: {e}"));
        match arg.as_str() {
            "-h" | "--help" => {
                println!("{HELP}");
                std::process::exit(0);
            }
            "--variant" => {
                let v = value("--variant")?;
                o.variants = if v == "all" {
                    Variant::ALL.to_vec()
                } else {
                    vec![v.parse().map_err(|e| format!("{e}"))?]
                };
            }
            "--pairing" => {
                let p = value("--pairing")?;
                if p != "all" {
                    o.pairings = vec![p];
                }
            }
            "--games" => o.games = num(value("--games")?)? as usize,
            "--jobs" => o.jobs = num(value("--jobs")?)?.max(1) as usize,
            "--plies" => o.plies = num(value("--plies")?)? as usize,
            "--seed" => o.seed = num(value("--seed")?)?,
            "--max-plies" => o.max_plies = num(value("--max-plies")?)? as usize,
            "--minutes" => o.minutes = num(value("--minutes")?)?,
            "--no-sprt" => o.sprt = false,
            "--stockfish" => o.stockfish = value("--stockfish")?,
            "--sf-movetime" => o.sf_movetime = num(value("--sf-movetime")?)?,
            "--balanced" => o.balanced = Some(num(value("--balanced")?)? as i32),
            other => return Err(format!("unknown argument `{other}` (see --help)")),
        }
    }
    Ok(o)
}

fn pairing(name: &str) -> Option<Pairing> {
    Some(match name {
        "easy-random" => Pairing {
            hero: Player::Engine(Level::Easy),
            villain: Player::Random,
            target: 0.95,
        },
        "medium-easy" => Pairing {
            hero: Player::Engine(Level::Medium),
            villain: Player::Engine(Level::Easy),
            target: 0.75,
        },
        "hard-medium" => Pairing {
            hero: Player::Engine(Level::Hard),
            villain: Player::Engine(Level::Medium),
            target: 0.75,
        },
        "hard-stockfish" => Pairing {
            hero: Player::Engine(Level::Hard),
            villain: Player::Stockfish,
            target: 0.5,
        },
        _ => return None,
    })
}

/// SplitMix64, for openings and layouts (the library's generator is private).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A random layout from `rng` (the ladder is not a server: reproducibility beats secrecy).
fn random_layout(rng: &mut Rng) -> Layout {
    let mut out = String::with_capacity(31);
    for upper in [true, false] {
        let mut ids: Vec<char> = "PPPPPPPPNNBBRRQ".chars().collect();
        for i in (1..ids.len()).rev() {
            ids.swap(i, rng.below(i + 1));
        }
        if !upper {
            out.push('/');
        }
        out.extend(
            ids.iter()
                .map(|c| if upper { *c } else { c.to_ascii_lowercase() }),
        );
    }
    Layout::from_canonical(&out).expect("a shuffle of the fifteen identities is a layout")
}

/// What one seat has seen of a game: reveals (public) and its own captures of hidden pieces.
#[derive(Default, Clone)]
struct Seen {
    reveals: Vec<(Color, Role)>,
    own_captures: [Vec<Role>; 2],
    /// Repetition keys of earlier positions since the last irreversible move.
    history: Vec<u64>,
}

struct Stockfish {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Stockfish {
    fn start(path: &str) -> Result<(Stockfish, u32), String> {
        let mut child = Command::new(path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {path}: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut sf = Stockfish {
            child,
            stdin,
            stdout,
        };
        sf.send("uci")?;
        let mut min_elo = 1350;
        loop {
            let line = sf.line()?;
            if line.starts_with("option name UCI_Elo") {
                let mut words = line.split_whitespace();
                while let Some(w) = words.next() {
                    if w == "min" {
                        min_elo = words.next().and_then(|v| v.parse().ok()).unwrap_or(min_elo);
                    }
                }
            }
            if line == "uciok" {
                break;
            }
        }
        sf.send("setoption name Threads value 1")?;
        sf.send("setoption name UCI_LimitStrength value true")?;
        sf.send(&format!("setoption name UCI_Elo value {min_elo}"))?;
        sf.send("isready")?;
        while sf.line()? != "readyok" {}
        Ok((sf, min_elo))
    }

    fn send(&mut self, s: &str) -> Result<(), String> {
        writeln!(self.stdin, "{s}").map_err(|e| e.to_string())?;
        self.stdin.flush().map_err(|e| e.to_string())
    }

    fn line(&mut self) -> Result<String, String> {
        let mut line = String::new();
        let n = self
            .stdout
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("stockfish closed its output".into());
        }
        Ok(line.trim().to_owned())
    }

    fn best_move(&mut self, fen: &str, movetime: u64) -> Result<String, String> {
        self.send(&format!("position fen {fen}"))?;
        self.send(&format!("go movetime {movetime}"))?;
        loop {
            let line = self.line()?;
            if let Some(rest) = line.strip_prefix("bestmove ") {
                return Ok(rest.split_whitespace().next().unwrap_or("").to_owned());
            }
        }
    }
}

impl Drop for Stockfish {
    fn drop(&mut self) {
        let _ = self.send("quit");
        let _ = self.child.wait();
    }
}

/// The result of one game for the hero: 1, ½ or 0, and think times by level.
struct GameResult {
    hero_score: f64,
    think: Vec<(Level, ThinkTime)>,
    plies: usize,
}

fn play_game(
    variant: Variant,
    pairing: &Pairing,
    index: usize,
    opts: &Options,
    stockfish: &mut Option<Stockfish>,
) -> Result<GameResult, String> {
    // Game 2k and 2k+1 share the opening and the layout, with colours swapped.
    let mut rng =
        Rng(opts.seed ^ (index as u64 / 2).wrapping_mul(0x2545_f491_4f6c_dd1d) ^ variant as u64);
    let hero_color = if index.is_multiple_of(2) {
        Color::White
    } else {
        Color::Black
    };
    let mut game = match variant {
        Variant::Hidden => Game::new_hidden(Shuffle::new(random_layout(&mut rng), [7; 32])),
        other => Game::from_position(Position::new(other)),
    };
    let mut seen = Seen::default();
    let mut think_times = Vec::new();
    let mut ply = 0;
    // The opening: random plies (re-drawn while they end the game).
    let opening = pick_opening(&game, &mut rng, opts)?;
    let mut move_rng = Rng(rng.next());
    loop {
        if let Some(outcome) = game.outcome() {
            return Ok(GameResult {
                hero_score: score_for(outcome, hero_color),
                think: think_times,
                plies: ply,
            });
        }
        if ply >= opts.max_plies {
            return Ok(GameResult {
                hero_score: 0.5,
                think: think_times,
                plies: ply,
            });
        }
        let seat = game.side_to_act();
        let player = if ply < opts.plies {
            Player::Random
        } else if seat == hero_color {
            pairing.hero
        } else {
            pairing.villain
        };
        let view = game.view(Audience::Player(seat));
        let before = *game.position();
        let report = if view.pending_promotion.is_some() {
            let role = match player {
                Player::Engine(level) => {
                    let sv = seat_view(&game, seat, &seen)?;
                    match think_with(&sv, level, opts.seed ^ ply as u64, &mut think_times)?.decision
                    {
                        Decision::Promote(role) => role,
                        Decision::Move(_) => {
                            return Err("a move while a promotion is pending".into());
                        }
                    }
                }
                _ => Role::Queen,
            };
            game.choose_promotion(role).map_err(|e| e.to_string())?
        } else {
            let moves = game.legal_moves();
            let m = match player {
                Player::Random => {
                    let r = if ply < opts.plies {
                        opening[ply]
                    } else {
                        move_rng.below(1 << 20)
                    };
                    moves[r % moves.len()]
                }
                Player::Engine(level) => {
                    let sv = seat_view(&game, seat, &seen)?;
                    match think_with(
                        &sv,
                        level,
                        opts.seed ^ (index as u64) << 20 ^ ply as u64,
                        &mut think_times,
                    )?
                    .decision
                    {
                        Decision::Move(m) => m,
                        Decision::Promote(_) => return Err("a promotion with none pending".into()),
                    }
                }
                Player::Stockfish => {
                    let sf = stockfish.as_mut().ok_or("stockfish is not running")?;
                    let uci = sf.best_move(&game.position().fen(), opts.sf_movetime)?;
                    game.position()
                        .parse_uci(&uci)
                        .map_err(|e| format!("stockfish {uci}: {e}"))?
                }
            };
            game.play(&m).map_err(|e| e.to_string())?
        };
        // What each seat learns.
        let public = report.for_audience(Audience::Spectator);
        if let Some(reveal) = public.reveal {
            seen.reveals.push((public.mover, reveal.role));
        }
        let mover_view = report.for_audience(Audience::Player(public.mover));
        if let Some(role) = mover_view.captured_identity {
            seen.own_captures[public.mover as usize].push(role);
        }
        if !public.promotion_pending {
            if game.position().halfmoves() == 0 {
                seen.history.clear();
            } else {
                seen.history.push(before.repetition_key());
            }
            ply += 1;
        }
    }
}

/// Random opening plies (indices into the legal move lists), re-drawn while they end the
/// game or — with `--balanced CP`, standard and atomic only — while a quick search scores
/// the position beyond CP centipawns for either side (a random atomic opening is often
/// already lost, and a lost opening is a coin flip for a colour-swapped pair).
fn pick_opening(start: &Game, rng: &mut Rng, opts: &Options) -> Result<Vec<usize>, String> {
    let mut last = Vec::new();
    for _ in 0..50 {
        let picks: Vec<usize> = (0..opts.plies).map(|_| rng.below(1 << 20)).collect();
        let mut game = start.clone();
        let mut ended = false;
        for &pick in &picks {
            if game.outcome().is_some() {
                ended = true;
                break;
            }
            if game.pending_promotion().is_some() {
                game.choose_promotion(Role::Queen)
                    .map_err(|e| e.to_string())?;
            }
            let moves = game.legal_moves();
            if moves.is_empty() {
                ended = true;
                break;
            }
            game.play(&moves[pick % moves.len()])
                .map_err(|e| e.to_string())?;
        }
        last = picks;
        if ended || game.outcome().is_some() || game.pending_promotion().is_some() {
            continue;
        }
        let Some(limit) = opts.balanced else {
            return Ok(last);
        };
        if game.variant() == Variant::Hidden {
            return Ok(last);
        }
        let pos = *game.position();
        let view = SeatView::open(pos.turn(), pos, Vec::new());
        let thought = think(&Request {
            view: &view,
            level: Level::Hard,
            clock: None,
            seed: 0,
            limits: Some(Limits {
                nodes: Some(20_000),
                deadline: None,
            }),
        })
        .map_err(|e| e.to_string())?;
        if thought.score.abs() <= limit {
            return Ok(last);
        }
    }
    Ok(last)
}

fn seat_view(game: &Game, seat: Color, seen: &Seen) -> Result<SeatView, String> {
    let view = game.view(Audience::Player(seat));
    match view.position.variant() {
        Variant::Hidden => SeatView::hidden(
            seat,
            view.position,
            view.pending_promotion,
            seen.history.clone(),
            &seen.reveals,
            &seen.own_captures[seat as usize],
        )
        .map_err(|e| e.to_string()),
        _ => Ok(SeatView::open(seat, view.position, seen.history.clone())),
    }
}

/// CPU time this thread has run, from Linux's `/proc/thread-self/schedstat` (first field,
/// nanoseconds): think time on one core, whatever else the machine is doing.
fn thread_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns = stat.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// Think times of one level: wall clock and CPU time of the thinking thread.
#[derive(Debug, Clone, Copy)]
struct ThinkTime {
    wall: Duration,
    cpu: Option<Duration>,
}

fn think_with(
    view: &SeatView,
    level: Level,
    seed: u64,
    times: &mut Vec<(Level, ThinkTime)>,
) -> Result<frontier_engine::Thought, String> {
    let start = Instant::now();
    let cpu_start = thread_cpu_time();
    let thought = think(&Request {
        view,
        level,
        clock: None,
        seed,
        limits: Some(Limits {
            nodes: Some(level.node_budget(view.variant())),
            deadline: None,
        }),
    })
    .map_err(|e| e.to_string())?;
    let wall = start.elapsed();
    let cpu = thread_cpu_time()
        .zip(cpu_start)
        .map(|(end, begin)| end.saturating_sub(begin));
    times.push((level, ThinkTime { wall, cpu }));
    Ok(thought)
}

fn score_for(outcome: Outcome, hero: Color) -> f64 {
    match outcome.winner() {
        Some(w) if w == hero => 1.0,
        Some(_) => 0.0,
        None => 0.5,
    }
}

/// Score statistics of a match so far.
#[derive(Default)]
struct Tally {
    wins: usize,
    draws: usize,
    losses: usize,
}

impl Tally {
    fn add(&mut self, s: f64) {
        if s > 0.75 {
            self.wins += 1;
        } else if s > 0.25 {
            self.draws += 1;
        } else {
            self.losses += 1;
        }
    }
    fn n(&self) -> usize {
        self.wins + self.draws + self.losses
    }
    fn mean(&self) -> f64 {
        (self.wins as f64 + 0.5 * self.draws as f64) / self.n().max(1) as f64
    }
    fn variance(&self) -> f64 {
        let n = self.n().max(1) as f64;
        let m = self.mean();
        (self.wins as f64 * (1.0 - m).powi(2)
            + self.draws as f64 * (0.5 - m).powi(2)
            + self.losses as f64 * m.powi(2))
            / n
    }
    /// Half-width of the 95% confidence interval of the mean.
    fn error_bar(&self) -> f64 {
        1.96 * (self.variance() / self.n().max(1) as f64).sqrt()
    }
    /// The GSPRT log-likelihood ratio of H1 (s1) against H0 (s0).
    fn llr(&self, s0: f64, s1: f64) -> f64 {
        let n = self.n() as f64;
        let var = self.variance().max(s1 * (1.0 - s1));
        n * (s1 - s0) * (2.0 * self.mean() - s0 - s1) / (2.0 * var)
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn run_match(variant: Variant, name: &str, p: Pairing, opts: &Options) -> Result<(), String> {
    let (s0, s1) = if p.target >= 0.9 {
        (p.target, (p.target + 0.04).min(0.995))
    } else {
        (p.target, p.target + 0.10)
    };
    let bound = (0.95f64 / 0.05).ln();
    let next = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<Result<GameResult, String>>();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(opts.minutes * 60);
    let mut sf_elo = None;
    let mut workers = Vec::new();
    for _ in 0..opts.jobs {
        let next = Arc::clone(&next);
        let stop = Arc::clone(&stop);
        let tx = tx.clone();
        let opts = opts.clone();
        let mut sf = None;
        if p.villain == Player::Stockfish {
            let (engine, elo) = Stockfish::start(&opts.stockfish)?;
            sf = Some(engine);
            sf_elo = Some(elo);
        }
        workers.push(std::thread::spawn(move || {
            loop {
                if stop.load(Ordering::Relaxed) || Instant::now() >= deadline {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= opts.games {
                    break;
                }
                let r = play_game(variant, &p, i, &opts, &mut sf);
                if tx.send(r).is_err() {
                    break;
                }
            }
        }));
    }
    drop(tx);
    let mut tally = Tally::default();
    let mut times: Vec<(Level, ThinkTime)> = Vec::new();
    let mut plies = 0;
    let mut verdict = "undecided";
    for r in rx {
        let r = r?;
        tally.add(r.hero_score);
        times.extend(r.think);
        plies += r.plies;
        if tally.n().is_multiple_of(10) {
            eprintln!(
                "progress {} {name}: {} games, +{} ={} -{}, {:.0} s",
                variant.name(),
                tally.n(),
                tally.wins,
                tally.draws,
                tally.losses,
                started.elapsed().as_secs_f64()
            );
        }
        if opts.sprt && tally.n() >= 10 && verdict == "undecided" {
            let llr = tally.llr(s0, s1);
            if llr >= bound {
                verdict = "H1 accepted (target met)";
                stop.store(true, Ordering::Relaxed);
            } else if llr <= -bound {
                verdict = "H0 accepted (target not shown)";
                stop.store(true, Ordering::Relaxed);
            }
        }
    }
    for w in workers {
        let _ = w.join();
    }
    let vs = match (p.villain, sf_elo) {
        (Player::Stockfish, Some(elo)) => {
            format!("stockfish (UCI_Elo {elo}, {} ms/move)", opts.sf_movetime)
        }
        (v, _) => v.name(),
    };
    println!(
        "| {} | {} vs {} | {} | +{} ={} -{} | {:.1}% ± {:.1} | {:.0}% | {} (LLR {:.2}) | {:.0} | {:.0} s |",
        variant.name(),
        p.hero.name(),
        vs,
        tally.n(),
        tally.wins,
        tally.draws,
        tally.losses,
        100.0 * tally.mean(),
        100.0 * tally.error_bar(),
        100.0 * p.target,
        verdict,
        tally.llr(s0, s1),
        plies as f64 / tally.n().max(1) as f64,
        started.elapsed().as_secs_f64(),
    );
    for level in Level::ALL {
        let mine = || times.iter().filter(|(l, _)| *l == level).map(|(_, t)| *t);
        let mut wall: Vec<Duration> = mine().map(|t| t.wall).collect();
        let mut cpu: Vec<Duration> = mine().filter_map(|t| t.cpu).collect();
        if wall.is_empty() {
            continue;
        }
        wall.sort();
        cpu.sort();
        eprintln!(
            "think-time {} {} {}: n={} cpu p50={:.3}s p95={:.3}s max={:.3}s | wall p50={:.3}s p95={:.3}s max={:.3}s",
            variant.name(),
            name,
            level.name(),
            wall.len(),
            percentile(&cpu, 0.5).as_secs_f64(),
            percentile(&cpu, 0.95).as_secs_f64(),
            percentile(&cpu, 1.0).as_secs_f64(),
            percentile(&wall, 0.5).as_secs_f64(),
            percentile(&wall, 0.95).as_secs_f64(),
            percentile(&wall, 1.0).as_secs_f64(),
        );
    }
    Ok(())
}

fn main() {
    let opts = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("ladder: {e}");
            std::process::exit(2);
        }
    };
    println!(
        "| variant | pairing | games | +W =D -L | score ± 95% | target | SPRT | plies/game | time |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut failed = false;
    for &variant in &opts.variants {
        for name in &opts.pairings {
            let Some(p) = pairing(name) else {
                eprintln!("ladder: unknown pairing `{name}` (see --help)");
                std::process::exit(2);
            };
            if p.villain == Player::Stockfish && variant != Variant::Standard {
                continue;
            }
            if let Err(e) = run_match(variant, name, p, &opts) {
                eprintln!("ladder: {} {name}: {e}", variant.name());
                failed = true;
            }
        }
    }
    if failed {
        std::process::exit(1);
    }
}
