//! Games played in-process by the engine, recorded as the service would receive them.
#![allow(dead_code, unreachable_pub, missing_docs)]

use frontier_engine::{Decision, Level, Limits, Request, think};
use frontier_fairplay::{GameInput, PlyInput, Replay, Settings};
use frontier_rules::{Color, Variant};

/// Who chooses a side's moves.
#[derive(Debug, Clone, Copy)]
pub enum Player {
    /// The engine at full strength (Hard, no imprecision) at this node budget.
    Engine(u64),
    /// An honest stand-in: a weaker level with its seeded imprecision, at this node budget
    /// (small in debug-build tests).
    Honest(Level, u64),
    /// The engine (at `nodes`) on this share of its moves, chosen by a seeded draw, Easy
    /// (at `easy_nodes`) on the others.
    Mixed {
        nodes: u64,
        easy_nodes: u64,
        share: f64,
    },
}

/// A small deterministic generator (splitmix64).
pub struct Mix(pub u64);

impl Mix {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in 0..1.
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Think times: both sides draw from the same human-like spread (0.5–12 s), so any
/// separation the tests see comes from the moves, not from the clock.
pub fn human_time(rng: &mut Mix) -> u64 {
    let u = rng.unit();
    500 + (u * u * 11_500.0) as u64
}

/// Plays a game of at most `max_plies` plies (stopped there if still going: the analysis
/// only needs moves). Returns the record and, per ply, whether the engine chose it.
pub fn play(
    variant: Variant,
    layout: Option<&str>,
    white: Player,
    black: Player,
    seed: u64,
    max_plies: u32,
) -> (GameInput, Vec<bool>) {
    let mut replay = Replay::start(variant, "", layout).expect("a start position");
    let mut rng = Mix(seed);
    let mut moves = Vec::new();
    let mut engine_used = Vec::new();
    let mut at_ms = 0;
    while !replay.is_over() && replay.ply() < max_plies {
        let mover = replay.mover();
        let player = if mover == Color::White { white } else { black };
        let view = replay.mover_view().expect("a consistent view");
        let (level, nodes, engine) = match player {
            Player::Engine(nodes) => (Level::Hard, nodes, true),
            Player::Honest(level, nodes) => (level, nodes, false),
            Player::Mixed {
                nodes,
                easy_nodes,
                share,
            } => {
                if rng.unit() < share {
                    (Level::Hard, nodes, true)
                } else {
                    (Level::Easy, easy_nodes, false)
                }
            }
        };
        let thought = think(&Request {
            view: &view,
            level,
            clock: None,
            seed: seed ^ u64::from(replay.ply()).wrapping_mul(0x2545_F491_4F6C_DD1D),
            limits: Some(Limits {
                nodes: Some(nodes),
                deadline: None,
            }),
        })
        .expect("the engine decides");
        let uci = match thought.decision {
            Decision::Move(m) => m.to_string(),
            Decision::Promote(role) => {
                // The record keeps the completed move with its promotion letter.
                let letter = role.char().to_string();
                replay
                    .play(&letter)
                    .expect("the engine's promotion is legal");
                if let Some(last) = moves.last_mut() {
                    let last: &mut PlyInput = last;
                    last.uci.push_str(&letter);
                }
                continue;
            }
        };
        at_ms += human_time(&mut rng);
        replay.play(&uci).expect("the engine's move is legal");
        moves.push(PlyInput {
            uci,
            at_ms,
            clock_ms: None,
        });
        engine_used.push(engine);
    }
    (
        GameInput {
            variant,
            start_fen: String::new(),
            initial_layout: layout.map(str::to_owned),
            moves,
            increment_ms: 0,
        },
        engine_used,
    )
}

/// Analysis settings for debug-build tests: a small budget.
pub fn quick_settings(nodes: u64) -> Settings {
    Settings {
        nodes,
        ..Settings::default()
    }
}

/// Runs `f(0..n)` on two threads (the machine has two cores), results in order.
pub fn in_parallel<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut out: Vec<(usize, T)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if i >= n {
                            break done;
                        }
                        done.push((i, f(i)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a worker finished"))
            .collect()
    });
    out.sort_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, t)| t).collect()
}

/// A shuffled layout (canonical string): White a1 b1 c1 d1 f1 g1 h1 a2 … h2, Black a8 …
/// h8 a7 … h7.
pub const LAYOUT: &str = "NPBRPQPPNRPBPPP/pprnbpqpbnpprpp";
